"""Library code copied into a submission ("vendored"): the functions of a submitted package whose
token fingerprints are mostly those of one function of the installed libraries that could compute
a component (torch.optim, clip_grad, torch.nn.functional and modules, torch._refs, torch._decomp,
tensor parallelism, tokenizers' Python, transformers' Llama), for staff review.

    library_corpus()                      -> Corpus: every def of those files, fingerprinted (cached)
    vendored_findings(package_dir, given) -> a VendoredFinding per function that copies one
    function_scores(package_dir, given)   -> every function's closest library function and score

Tokens. Each file is read by Python's tokenize (and parsed by ast to find spans) and normalised so
that renaming and reformatting change nothing: comments, docstrings, annotations, layout (NEWLINE,
INDENT, NL), `;` and trailing commas are dropped; strings become S and numbers their value. Every
name becomes V except the library's API, which a copy cannot rename without changing what it
calls: keywords, keyword-argument names in calls (`dim=`) and attribute names (`.addcdiv_`), but
not attributes of self or cls (`self.eta_min` is the code's own name, so V too).
Fingerprints. Winnowing (Schleimer, Wilkerson & Aiken 2003; MOSS): a deterministic hash of each K
consecutive tokens of a file, the smallest of every WINDOW consecutive hashes kept; a function
owns the kept k-grams inside it (each def, methods and nested defs too). Any run of
K + WINDOW - 1 tokens two functions share yields a shared fingerprint. Library methods in
BOILERPLATE are left out of the corpus.
Rule. A submission function copies the library function sharing most of its fingerprints if
that is more than THRESHOLD of its own fingerprints and the shared k-grams cover at least
MIN_SHARED_TOKENS of its tokens (a one-line forward or a 3-line softmax can share all its few
k-grams with torch's; it never shares that many tokens). Code the handout gives (`given`) is not
the student's: its k-grams are removed from the submission's fingerprints first.
Measured (benchmarks/vendored.py; torch 2.15, transformers 5.23; no `given`). The reference,
staff/ aside (509 functions with a fingerprint): 1.00 at most, but on 23 shared tokens at most
(Linear.forward, Embedding.forward: one line each); where 60 or more tokens are shared, 0.05 (one
function). With the handout filled with copies.py's independent bodies too (1375): still 0.05, and
41 tokens at most above 0.4. The 13 disguised copies of vendored_samples.py (renamed, reformatted):
0.86 to 1.00 on 60 to 881 tokens; with a statement of the copier's own after every 3rd statement,
0.70 at least (12 of 13 flagged), every 2nd 0.47 (11). Every k in 8..20 and window in 4..12
separates the plain copies; k=12, window 6 keeps the widest margins on both sides. Cost, CPU: the
corpus 1.2 to 1.6 s; a check 0.2 s for 4.1k lines, 0.35 to 0.45 s for the reference's 8.8k.
A finding costs no points: it is evidence for a person to read.
"""

import ast
import bisect
import functools
import importlib.util
import io
import keyword
import tokenize
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from cs336_basics.source_rule import parse

K = 12  # tokens per k-gram
WINDOW = 6  # k-grams per winnowing window: shared runs of K + WINDOW - 1 = 17 tokens are always found
THRESHOLD = 0.4  # fraction of a submission function's fingerprints that one library function shares
MIN_SHARED_TOKENS = 60  # and the tokens those shared k-grams cover, at least
MAX_FINDINGS = 50  # per submission: enough to review, bounded for results.json

# Library methods that compute no component: arguments are checked and state is made there (students
# write the same checks, often in torch's words), the math is in forward, step, get_lr, ...
BOILERPLATE = frozenset({"__init__", "__setstate__", "__getstate__", "__repr__", "extra_repr", "__str__"})
# (top-level package, files under it): what could compute a component
LIBRARY_FILES = (
    ("torch", "optim/*.py"),
    ("torch", "nn/utils/clip_grad.py"),
    ("torch", "nn/functional.py"),
    *(("torch", f"nn/modules/{m}.py") for m in ("activation", "linear", "normalization", "sparse", "loss", "dropout")),
    ("torch", "_refs/__init__.py"),
    ("torch", "_refs/nn/functional/__init__.py"),
    ("torch", "_decomp/decompositions.py"),
    ("torch", "distributed/tensor/parallel/*.py"),
    ("tokenizers", "**/*.py"),
    ("transformers", "models/llama/modeling_llama.py"),
)

_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
_LAYOUT |= {tokenize.ENDMARKER}
# what reading a file that is not Python raises (UnicodeDecodeError is a ValueError)
_UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError)
_FSTRING_START = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_FSTRING_END = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}
_OPENERS, _CLOSERS = {"(", "[", "{"}, {")", "]", "}"}
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_MULTIPLIER = 0x9E3779B97F4A7C15  # odd 64-bit constant of the polynomial k-gram hash


@dataclass(frozen=True)
class VendoredFinding:
    """A submission function that copies a library function."""

    path: str  # relative to the submission's root: cs336_basics/optim/adamw.py
    line: int  # the def's line
    library_function: str  # e.g. torch.optim.adam._single_tensor_adam
    shared: float  # fraction of the submission function's fingerprints the library function has

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: copies {self.library_function} ({self.shared:.0%} of its fingerprints)"


@dataclass(frozen=True)
class Score:
    """A submission function's closest library function: shared fraction and tokens covered."""

    path: str
    line: int
    function: str  # the submission function's qualified name in its file (AdamW.step)
    library_function: str
    shared: float
    shared_tokens: int
    fingerprints: int  # the submission function's own fingerprints (given code removed)
    end_line: int


@dataclass(frozen=True)
class _Def:
    """One def of a file: its qualified name, lines, and its span in the file's token list."""

    name: str
    line: int
    end_line: int
    first: int  # index of its first token
    last: int  # one past its last token


class _File(NamedTuple):
    """A file fingerprinted: its defs, the positions of the k-grams winnowing kept and their hashes."""

    defs: tuple[_Def, ...]
    kept: np.ndarray
    hashes: np.ndarray
    tokens: int


@dataclass
class Corpus:
    """The library's fingerprinted functions and an index from fingerprint to function."""

    names: list[str]
    hashes: list[frozenset[int]]
    index: dict[int, list[int]]
    files: list[Path]
    tokens: int
    k: int
    window: int


def _char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    """ast's byte column on line lineno as tokenize's character column."""
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    return byte_col if line.isascii() else len(line.encode()[:byte_col].decode("utf-8", "replace"))


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every statement under node, at any depth (with except handlers and match cases): where defs,
    docstrings and annotations are; expressions are not walked."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        for field in _BODIES:
            stack.extend(getattr(node, field, ()))


def _dropped_spans(tree: ast.AST, lines: list[str]) -> list[tuple]:
    """The spans normalisation drops, (start, end, is_annotation): bare strings (docstrings) and
    annotations."""
    drop = []

    def add(node: ast.AST, annotation: bool) -> None:
        start = (node.lineno, _char_col(lines, node.lineno, node.col_offset))
        drop.append((start, (node.end_lineno, _char_col(lines, node.end_lineno, node.end_col_offset)), annotation))

    for node in _statements(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            add(node, False)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                if arg is not None and arg.annotation is not None:
                    add(arg.annotation, True)
            if node.returns is not None:
                add(node.returns, True)
        elif isinstance(node, ast.AnnAssign):
            add(node.annotation, True)
    return drop


def _raw_tokens(source: str) -> Iterator[tokenize.TokenInfo]:
    """tokenize's tokens of source, f-strings collapsed to their first token (Python 3.12+ splits them)."""
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _FSTRING_START:
            depth += 1
            if depth == 1:
                yield tok._replace(type=tokenize.STRING)
        elif tok.type in _FSTRING_END:
            depth -= 1
        elif depth == 0 and tok.type not in _LAYOUT:
            yield tok


def _number(text: str) -> str:
    """A number token as its value (1e-3 and 0.001 alike), or as written if it has none."""
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text


def _kept_tokens(source: str, drop: list[tuple]) -> list[tokenize.TokenInfo]:
    """source's tokens without layout and without those inside the spans to drop (an annotation's
    `:` or `->` too)."""
    toks = list(_raw_tokens(source))
    starts, dropped = [t.start for t in toks], bytearray(len(toks))
    for start, end, annotation in drop:
        i = j = bisect.bisect_left(starts, start)
        while j < len(toks) and toks[j].end <= end:
            dropped[j] = 1
            j += 1
        if annotation and i > 0 and toks[i - 1].string in (":", "->"):
            dropped[i - 1] = 1
    return [t for t, skip in zip(toks, dropped, strict=True) if not skip and t.string != ";"]


def normalised(source: str) -> tuple[list[str], list[tuple[int, int]], ast.Module]:
    """source's normalised tokens (see the module's docstring), their start positions, its tree."""
    tree = parse(source)  # one at a time in the process (source_rule.PARSING)
    toks = _kept_tokens(source, _dropped_spans(tree, source.splitlines()))
    out, positions, brackets = [], [], []  # brackets: per open bracket, whether it is a call's `(`
    for i, tok in enumerate(toks):
        text = tok.string
        if tok.type == tokenize.NAME:
            api = out and out[-1] == "." and not (i > 1 and toks[i - 2].string in ("self", "cls"))
            call_keyword = brackets and brackets[-1] and i + 1 < len(toks) and toks[i + 1].string == "="
            text = text if api or call_keyword or keyword.iskeyword(text) else "V"
        elif tok.type == tokenize.NUMBER:
            text = _number(text)
        elif tok.type == tokenize.STRING:
            text = "S"
        elif text in _OPENERS:
            brackets.append(text == "(" and not (i > 1 and toks[i - 2].string == "def"))
        elif text in _CLOSERS:
            brackets = brackets[:-1] if brackets else brackets
            if out and out[-1] == ",":  # a trailing comma
                out.pop(), positions.pop()
        out.append(text)
        positions.append(tok.start)
    return out, positions, tree


def _defs(tree: ast.Module, source: str, positions: list[tuple[int, int]]) -> list[_Def]:
    """Every def of the tree (methods and nested defs too), with its span of the token list."""
    lines, out = source.splitlines(), []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in (c for field in _BODIES for c in getattr(node, field, ())):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                start = (child.lineno, _char_col(lines, child.lineno, child.col_offset))
                end = (child.end_lineno, _char_col(lines, child.end_lineno, child.end_col_offset))
                first, last = bisect.bisect_left(positions, start), bisect.bisect_left(positions, end)
                out.append(_Def(prefix + child.name, child.lineno, child.end_lineno, first, last))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


@functools.cache
def _token_id(text: str) -> int:
    """A normalised token's 32-bit id (its CRC, + 1), the same in every process."""
    return zlib.crc32(text.encode()) + 1


def kgram_hashes(tokens: list[str], k: int = K) -> np.ndarray:
    """A deterministic 64-bit hash of each k consecutive tokens (a polynomial in the tokens' CRCs)."""
    if len(tokens) < k:
        return np.zeros(0, dtype=np.uint64)
    ids = np.fromiter(map(_token_id, tokens), dtype=np.uint64, count=len(tokens))
    powers = np.array([pow(_MULTIPLIER, e, 2**64) for e in range(k - 1, -1, -1)], dtype=np.uint64)
    return (np.lib.stride_tricks.sliding_window_view(ids, k) * powers).sum(axis=1, dtype=np.uint64)


def winnow(hashes: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """The positions winnowing keeps: the rightmost smallest hash of every `window` consecutive ones."""
    if len(hashes) <= window:
        return np.array([len(hashes) - 1 - int(np.argmin(hashes[::-1]))] if len(hashes) else [], dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(hashes, window)[:, ::-1]
    return np.unique(window - 1 - np.argmin(windows, axis=1) + np.arange(len(windows)))


@functools.lru_cache(maxsize=256)
def fingerprinted(source: str, k: int = K, window: int = WINDOW) -> _File:
    """source's defs, the kept k-grams' positions (sorted) and hashes, and its number of tokens.
    Cached by text, read-only: the submissions of one grading share most of their files."""
    tokens, positions, tree = normalised(source)
    hashes = kgram_hashes(tokens, k)
    kept = winnow(hashes, window)
    kept_hashes = hashes[kept]
    kept.flags.writeable = kept_hashes.flags.writeable = False
    return _File(tuple(_defs(tree, source, positions)), kept, kept_hashes, len(tokens))


def _owned(d: _Def, kept: np.ndarray, k: int) -> slice:
    """The slice of a file's kept k-grams that lie inside def d."""
    lo, hi = np.searchsorted(kept, [d.first, d.last - k + 1])
    return slice(int(lo), int(max(lo, hi)))


def library_files() -> list[tuple[str, Path]]:
    """(module name, path) of each installed LIBRARY_FILES file; a missing package or file is skipped."""
    out = []
    for package, pattern in LIBRARY_FILES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.glob(pattern)):
            parts = path.relative_to(root.parent).with_suffix("").parts
            out.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return out


def build_corpus(k: int = K, window: int = WINDOW) -> Corpus:
    """Fingerprint every def of library_files() (library_corpus is this, cached, at K and WINDOW)."""
    names, hashes, index, files, tokens = [], [], {}, [], 0
    for module, path in library_files():
        try:
            file = fingerprinted(path.read_text(encoding="utf-8"), k, window)
        except (OSError, *_UNREADABLE):
            continue
        files.append(path)
        tokens += file.tokens
        for d in file.defs:
            own = frozenset(file.hashes[_owned(d, file.kept, k)].tolist())
            if not own or d.name.rpartition(".")[2] in BOILERPLATE:
                continue
            for h in own:
                index.setdefault(h, []).append(len(names))
            names.append(f"{module}.{d.name}")
            hashes.append(own)
    return Corpus(names, hashes, index, files, tokens, k, window)


@functools.cache
def library_corpus() -> Corpus:
    """The installed libraries' functions, fingerprinted once per process."""
    return build_corpus()


@functools.lru_cache(maxsize=512)
def _all_kgrams(text: str, k: int) -> frozenset[int]:
    """Every k-gram hash of text (a handout file: the same for every submission graded)."""
    try:
        return frozenset(kgram_hashes(normalised(text)[0], k).tolist())
    except _UNREADABLE:
        return frozenset()


def _score(rel: str, d: _Def, hashes: np.ndarray, positions: np.ndarray, corpus: Corpus) -> Score | None:
    """d's closest library function by shared fingerprints (ties: the larger share of the library
    function's), from d's fingerprint hashes and their token positions."""
    own = {}
    for h, p in zip(hashes.tolist(), positions.tolist(), strict=True):
        own.setdefault(h, []).append(p)
    if not own:
        return None
    counts = Counter(fi for h in own for fi in corpus.index.get(h, ()))
    if not counts:
        return Score(rel, d.line, d.name, "", 0.0, 0, len(own), d.end_line)
    best = max(counts, key=lambda fi: (counts[fi], counts[fi] / len(corpus.hashes[fi]), -fi))
    covered = set()
    for h in own.keys() & corpus.hashes[best]:
        for p in own[h]:
            covered.update(range(p, p + corpus.k))
    return Score(rel, d.line, d.name, corpus.names[best], counts[best] / len(own), len(covered), len(own), d.end_line)


def _package_files(package_dir: Path) -> Iterator[tuple[str, str]]:
    """(path relative to the submission's root, text) of each regular .py file under package_dir."""
    for path in sorted(package_dir.rglob("*.py")):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            yield f"{package_dir.name}/{path.relative_to(package_dir).as_posix()}", path.read_text("utf-8", "replace")
        except OSError:
            continue


def function_scores(
    package_dir: Path, given: Callable[[str], str] | None = None, corpus: Corpus | None = None
) -> list[Score]:
    """Every def of the package's .py files with a fingerprint: its closest library function."""
    corpus = corpus or library_corpus()
    out = []
    for rel, source in _package_files(Path(package_dir)):
        try:
            file = fingerprinted(source, corpus.k, corpus.window)
        except _UNREADABLE:
            continue
        removed = _all_kgrams(given(rel), corpus.k) if given is not None else frozenset()
        for d in file.defs:
            part = _owned(d, file.kept, corpus.k)
            hashes, positions = file.hashes[part], file.kept[part]
            if removed:
                mine = np.array([h not in removed for h in hashes.tolist()], dtype=bool)
                hashes, positions = hashes[mine], positions[mine]
            if (score := _score(rel, d, hashes, positions, corpus)) is not None:
                out.append(score)
    return out


def vendored_findings(package_dir: Path, given: Callable[[str], str] | None = None) -> list[VendoredFinding]:
    """The functions of the submitted package (its cs336_basics/ directory) that copy a library
    function, by file and line, at most MAX_FINDINGS; `given(rel)` is the handout's text of file rel
    ("cs336_basics/optim/adamw.py"), "" if it has none (handout_text is that for this repository)."""
    flagged = [
        s for s in function_scores(package_dir, given) if s.shared > THRESHOLD and s.shared_tokens >= MIN_SHARED_TOKENS
    ]
    outer = [  # a nested def flagged with the same library function as its enclosing def is the same copy
        s
        for s in flagged
        if not any(
            o is not s and o.path == s.path and o.line <= s.line <= s.end_line <= o.end_line
            and o.library_function == s.library_function
            for o in flagged
        )
    ]  # fmt: skip
    return [VendoredFinding(s.path, s.line, s.library_function, s.shared) for s in outer][:MAX_FINDINGS]


@functools.cache
def handout_text(rel: str) -> str:
    """The handout's text of file rel (the reference's, solution regions stubbed), "" if it has none:
    the `given` that vendored_findings wants."""
    from cs336_basics import REPO
    from cs336_basics.staff.handout import stub_text

    path = REPO / rel
    if not path.is_file():
        return ""
    return stub_text(path)
