"""Mutants of a file's solution regions: one small syntactic change each, made only to code that lies
wholly between a `# BEGIN SOLUTION` and its `# END SOLUTION`.

    mutants_of(path, regions, rel) -> every mutant of those regions, each a whole mutated file text

A mutant replaces one AST node's source span with the unparsed mutated node (parenthesised where
it sits inside a larger expression), so the rest of the file keeps its text byte for byte. Every
returned mutant compiles and differs from the original; duplicates (two routes to the same text)
are kept once. Its key (file, the first mutated line's stripped text, the mutation, the occurrence
of that pair) names it without a line number, so a record of it survives edits elsewhere.
"""

import ast
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cs336_basics.staff.handout import Region

BINOPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.MatMult: ast.Mult,
}
CMPOPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
BOOLOPS = {ast.And: ast.Or, ast.Or: ast.And}
ATOMS = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Tuple, ast.Dict)


@dataclass(frozen=True)
class Mutant:
    """One mutated copy of `file` (relative to the repository); `text` is the whole mutated file."""

    file: str
    qualname: str
    line: int  # 1-based, for display only: the key does not use it
    line_text: str  # the first mutated line, stripped
    mutation: str  # "`old` -> `new`"
    occurrence: int  # 1 unless the same (line_text, mutation) occurs earlier in the file
    text: str

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.file, self.line_text, self.mutation, self.occurrence)

    def diff(self, original: str) -> str:
        lines = difflib.unified_diff(
            original.splitlines(keepends=True), self.text.splitlines(keepends=True), f"a/{self.file}", f"b/{self.file}"
        )
        return "".join(lines)


def _copy(node: ast.AST, **changes) -> ast.AST:
    fields = {name: getattr(node, name) for name in node._fields} | changes
    return type(node)(**fields)


def _call_mutations(node: ast.Call) -> Iterator[ast.AST]:
    """The call replaced by its first argument (a cast, an upcast, an elementwise function dropped),
    a method call without arguments by its receiver (`x.float()` -> `x`), each keyword dropped."""
    if node.args and not isinstance(node.args[0], ast.Starred):
        yield node.args[0]
    elif not node.args and not node.keywords and isinstance(node.func, ast.Attribute):
        yield node.func.value
    for i, kw in enumerate(node.keywords):
        if kw.arg is not None:
            yield _copy(node, keywords=node.keywords[:i] + node.keywords[i + 1 :])


def _constant_mutations(node: ast.Constant) -> Iterator[ast.AST]:
    value = node.value
    if isinstance(value, bool):
        yield ast.Constant(not value)
    elif isinstance(value, int):
        yield ast.Constant(value + 1)
    elif isinstance(value, float):
        yield ast.Constant(value * 2 if value else 1.0)


def _expression_mutations(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
        yield _copy(node, op=BINOPS[type(node.op)]())
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in CMPOPS:
                yield _copy(node, ops=node.ops[:i] + [CMPOPS[type(op)]()] + node.ops[i + 1 :])
    elif isinstance(node, ast.BoolOp):
        yield _copy(node, op=BOOLOPS[type(node.op)]())
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
        yield node.operand
    elif isinstance(node, ast.Constant):
        yield from _constant_mutations(node)
    elif isinstance(node, ast.Call):
        yield from _call_mutations(node)


def _statement_mutations(node: ast.AST) -> Iterator[ast.AST]:
    """In-place updates deleted (`pass`), augmented operators swapped, non-comparison tests negated."""
    if isinstance(node, ast.AugAssign) and type(node.op) in BINOPS:
        yield _copy(node, op=BINOPS[type(node.op)]())
    deletable = isinstance(node, (ast.Expr, ast.AugAssign))
    deletable |= isinstance(node, ast.Assign) and all(isinstance(t, ast.Subscript) for t in node.targets)
    if deletable:
        yield ast.Pass()
    if isinstance(node, (ast.If, ast.While)) and not isinstance(node.test, (ast.Compare, ast.UnaryOp)):
        yield ast.UnaryOp(ast.Not(), node.test)


def _replacement(node: ast.AST, new: ast.AST, parent: ast.AST | None) -> str:
    if isinstance(node, (ast.If, ast.While)):  # only the test changes: its own span is replaced
        return ast.unparse(new)
    text = ast.unparse(ast.fix_missing_locations(new))
    inside_expression = isinstance(parent, ast.expr)
    return f"({text})" if inside_expression and not isinstance(new, ATOMS) else text


def _span(node: ast.AST) -> ast.AST:
    return node.test if isinstance(node, (ast.If, ast.While)) else node


def _splice(lines: list[bytes], node: ast.AST, text: str) -> str:
    """The file with `node`'s source span (byte offsets, as ast gives them) replaced by `text`."""
    start, end = node.lineno - 1, node.end_lineno - 1
    head, tail = lines[start][: node.col_offset], lines[end][node.end_col_offset :]
    return b"".join(lines[:start] + [head + text.encode() + tail] + lines[end + 1 :]).decode()


def _sites(tree: ast.AST, regions: list[Region]) -> Iterator[tuple[ast.AST, ast.AST | None, Region]]:
    """Every node wholly inside a region's body (strictly between its markers), with its parent."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or getattr(node, "end_lineno", None) is None:
            continue
        for region in regions:  # Region.start/end are the 0-based marker lines
            if region.start + 1 < node.lineno and node.end_lineno < region.end + 1:
                yield node, parents.get(node), region


def mutants_of(path: Path, regions: list[Region], rel: str) -> list[Mutant]:
    """Every mutant of `regions` (all from the file at `path`), in source order; `rel` names the file."""
    original = Path(path).read_text()
    lines = original.encode().splitlines(keepends=True)
    text_lines = original.splitlines()
    found, seen, counts = [], {original}, {}
    sites = sorted(_sites(ast.parse(original), regions), key=lambda s: (s[0].lineno, s[0].col_offset))
    for node, parent, region in sites:
        for new in [*_expression_mutations(node), *_statement_mutations(node)]:
            span = _span(node)
            new_text = _replacement(node, new, parent)
            text = _splice(lines, span, new_text)
            if text in seen or not _compiles(text):
                continue
            seen.add(text)
            old = " ".join(ast.get_source_segment(original, span).split())
            line_text = text_lines[span.lineno - 1].strip()
            mutation = f"`{old}` -> `{' '.join(new_text.split())}`"
            counts[(line_text, mutation)] = occurrence = counts.get((line_text, mutation), 0) + 1
            found.append(Mutant(rel, region.qualname, span.lineno, line_text, mutation, occurrence, text))
    return found


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec")
    except SyntaxError:
        return False
    return True
