"""What the student's source may name: the rule the grader applies to the text of your files.

A positive rule, checked on the source (ast; nothing is imported from or run in your files):
  - imports: only the modules of ALLOWED_MODULES, and your own package;
  - a library name (torch.X, np.X, math.X, ...) must be on its module's list: torch's are the
    elementary operations (cs336_basics/elementary_ops.py) and TORCH_TOOLS; no `_private` part;
  - a module is used only as the start of such a name, never as a value (passed, stored, returned);
  - no attribute of a library is assigned or deleted;
  - no `_private` attribute of an object, except on `self`/`cls` or a name your package defines,
    and no dunder attribute beyond DUNDERS;
  - no exec, eval, compile, __import__, globals, locals, vars, breakpoint; getattr, setattr,
    delattr and hasattr only with a literal public name (or one your package defines);
  - no `__torch_function__`, `__torch_dispatch__`, `__del__`, `__reduce__` or `__getattribute__`.
Everything the run-time recorder watches (modes, the profiler, the profile hook, threads, the
module table) lies behind a name this rule does not allow, so your code cannot reach it.

Given files (those the handout gives with no solution region, unchanged) are not checked.
check_files() is used by the public suite (tests/test_source_rule.py) and by the grader, which
gives a component 0 when the code it ran lies in a file or function that breaks the rule.
"""

import ast
import hashlib
import importlib
import inspect
import sys
import threading
import types
from dataclasses import dataclass
from pathlib import Path

from cs336_basics import elementary_ops

PACKAGE = "cs336_basics"
STDLIB = frozenset(
    "__future__ abc array bisect cmath collections collections.abc contextlib copy dataclasses decimal enum "
    "fractions functools heapq io itertools json math numbers operator os os.path pathlib random re "
    "statistics string struct textwrap time typing unicodedata warnings".split()
)
ALLOWED_MODULES = STDLIB | frozenset(
    "torch torch.nn torch.nn.functional torch.nn.init torch.optim torch.distributed torch.autograd "
    "torch.special torch.linalg numpy numpy.typing einops jaxtyping regex tqdm tqdm.auto typing_extensions "
    "multiprocessing concurrent.futures".split()
)
# Modules of which only these names may be named: a process pool (serial_pools.py runs it in the
# calling process while a component is graded or tested), never a process or thread of its own.
ONLY_NAMES = {
    "multiprocessing": ("Pool", "cpu_count"),
    "concurrent.futures": ("ProcessPoolExecutor", "as_completed"),
}
# Names a module's list forbids although the module is allowed (the rest of its public names are allowed).
FORBIDDEN_NAMES = {
    "numpy": ("random", "ctypeslib", "testing", "f2py", "distutils", "core", "load", "save"),
    "operator": ("attrgetter", "methodcaller"),  # resolve names given as strings
    "os": (
        "fork forkpty system popen kill killpg spawnl spawnle spawnlp spawnlpe spawnv spawnve spawnvp spawnvpe "
        "execl execle execlp execlpe execv execve execvp execvpe posix_spawn posix_spawnp register_at_fork "
        "setsid dup dup2 pipe pipe2 open fdopen write read close closerange chmod chown setuid setgid "
        "putenv unsetenv memfd_create"
    ).split(),
    "functools": (),
    "typing": (),
}
# torch's names that are tools rather than operations: types, dtypes, autograd and module plumbing
TORCH_TOOLS = frozenset(
    (
        "Tensor Size dtype device Generator finfo iinfo no_grad enable_grad inference_mode set_grad_enabled "
        "is_grad_enabled is_tensor is_floating_point is_complex numel get_default_dtype tensor as_tensor "
        "from_numpy asarray manual_seed save load float16 float32 float64 bfloat16 half float double int8 "
        "uint8 uint16 uint32 int16 int32 int64 int long short bool complex64 complex128 cfloat cdouble "
        "contiguous_format preserve_format channels_last autograd.Function autograd.function.FunctionCtx autograd.grad jit.script cuda.is_available "
        "nn.Module nn.Parameter nn.ModuleList nn.ModuleDict nn.ParameterList nn.ParameterDict nn.Sequential "
        "nn.Identity nn.Dropout nn.init optim.Optimizer optim.optimizer.Optimizer distributed"
    ).split()
)
TORCH_OP_SPACES = ("", "Tensor.", "special.", "linalg.", "nn.functional.")
OP_ALIASES = {"expit": "sigmoid", "square": "pow", "concat": "cat", "matrix_power": "matmul"}
DUNDERS = frozenset(
    "__init__ __class__ __name__ __doc__ __len__ __iter__ __next__ __enter__ __exit__ __call__ __getitem__ "
    "__setitem__ __contains__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __repr__ __str__ __add__ "
    "__mul__ __post_init__ __version__ __file__ __all__".split()
)
FORBIDDEN_DEFS = frozenset(
    "__torch_function__ __torch_dispatch__ __del__ __reduce__ __reduce_ex__ __getattribute__ __init_subclass__".split()
)
FORBIDDEN_BUILTINS = frozenset("exec eval compile __import__ globals locals vars breakpoint __builtins__".split())
NAME_FUNCTIONS = frozenset("getattr setattr delattr hasattr".split())


@dataclass(frozen=True)
class Violation:
    path: str  # relative to the package's parent: cs336_basics/nn/functional.py
    line: int
    what: str  # what the line does and what to use instead
    code: str  # the line, stripped
    unit: tuple[int, int] | None  # the lines of the top-level def or class it is in; None: module level

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}\n    {self.code}"


def _torch_allowed(rest: str) -> bool:
    """Whether torch.<rest> is an elementary operation or one of TORCH_TOOLS."""
    if any(rest == tool or rest.startswith(tool + ".") for tool in TORCH_TOOLS):
        return not any(part.startswith("_") for part in rest.split("."))
    for space in TORCH_OP_SPACES:
        if rest.startswith(space) and "." not in rest[len(space) :]:
            op = rest[len(space) :]
            op = OP_ALIASES.get(op, op)
            aten = {"linalg.": f"aten.linalg_{op}", "special.": f"aten.special_{op}"}.get(space, f"aten.{op}")
            return elementary_ops.elementary(aten) and (not op.startswith("_") or op.startswith("_foreach_"))
    return False


def allowed_path(path: str) -> bool:
    """Whether the library name `path` (e.g. torch.nn.functional.silu, np.random.rand) may be named."""
    parts = path.split(".")
    if parts[0] == "torch":
        return len(parts) == 1 or _torch_allowed(".".join(parts[1:]))
    top = next(
        (m for m in sorted(ALLOWED_MODULES, key=len, reverse=True) if path == m or path.startswith(m + ".")), None
    )
    if top is None:
        return False
    rest = path[len(top) + 1 :].split(".") if path != top else []
    if any(p.startswith("_") and p not in DUNDERS for p in rest):
        return False
    if top in ONLY_NAMES:
        return bool(rest) and rest[0] in ONLY_NAMES[top]
    return not (rest and rest[0] in FORBIDDEN_NAMES.get(top, ()))


def _is_module(path: str) -> bool:
    """Whether the library name `path` is a module (resolved in the modules imported here)."""
    top = path.split(".")[0]
    if top in {m.split(".")[0] for m in ALLOWED_MODULES}:
        importlib.import_module(top)  # the same answer whatever this process imported before
    if path in sys.modules:
        return True
    obj = sys.modules.get(top)
    for part in path.split(".")[1:]:
        obj = _static_attribute(obj, part)
    return isinstance(obj, types.ModuleType)


def _static_attribute(obj: object, name: str) -> object:
    """obj.name as stored, or None: never a module's __getattr__ (torch imports its lazy modules
    there, so a name in a student's text would import code into the grader) nor a property."""
    return inspect.getattr_static(obj, name, None)


def _library_attribute(name: str) -> bool:
    """Whether a private name is one torch's or NumPy's objects have (so not the package's own)."""
    import numpy
    import torch

    objects = (torch, torch.Tensor, torch.nn.Module, torch.nn.Parameter, numpy)
    return any(_static_attribute(obj, name) is not None for obj in objects)


def defined_names(trees: list[ast.AST]) -> frozenset[str]:
    """The private names the package itself defines (defs, classes, assigned names and attributes),
    less those a library object also has."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__") and not _library_attribute(n))


class _Visitor(ast.NodeVisitor):
    """Collects (line, what) of each name the rule does not allow, with the top-level unit it is in."""

    def __init__(self, own: frozenset[str]):
        self.own = own  # private names the package defines
        self.libraries: dict[str, str] = {}  # local name -> the library name it was imported as
        self.packages: set[str] = set()  # local names bound to the package's own modules or objects
        self.found: list[tuple[int, str, tuple[int, int] | None]] = []
        self.unit: tuple[int, int] | None = None
        self.function: str | None = None  # the innermost def's name

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append((node.lineno, what, self.unit))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                self.packages.add(local)
                continue
            self.libraries[local] = alias.name if alias.asname else alias.name.split(".")[0]
            if alias.name not in ALLOWED_MODULES:
                self._add(node, f"imports {alias.name}: not a module the rule allows ({_modules_hint()})")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or module == PACKAGE or module.startswith(PACKAGE + "."):
            self.packages.update(a.asname or a.name for a in node.names)
            return
        for alias in node.names:
            path = f"{module}.{alias.name}"
            self.libraries[alias.asname or alias.name] = path
            if alias.name == "*":
                self._add(node, f"imports * from {module}: name what you use")
            elif module not in ALLOWED_MODULES and path not in ALLOWED_MODULES:
                self._add(node, f"imports from {module}: not a module the rule allows ({_modules_hint()})")
            elif not (path in ALLOWED_MODULES if _is_module(path) else allowed_path(path)):
                self._add(node, f"names {path}: {_path_hint(path)}")

    def _chain(self, node: ast.AST) -> tuple[str, list[str]] | None:
        """(root name, attribute parts) of a chain a.b.c rooted at a plain name, else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return (node.id, parts[::-1]) if isinstance(node, ast.Name) else None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = self._chain(node)
        if chain is not None and chain[0] in self.libraries:
            path = ".".join([self.libraries[chain[0]], *chain[1]])
            if not isinstance(node.ctx, ast.Load):
                self._add(node, f"changes {path}: library code is read, never assigned or deleted")
            elif not allowed_path(path) and not (_is_module(path) and path in ALLOWED_MODULES):
                self._add(node, f"names {path}: {_path_hint(path)}")
            return
        self._attribute_of_value(node)
        self.generic_visit(node)

    def _attribute_of_value(self, node: ast.Attribute) -> None:
        attr, receiver = node.attr, node.value
        if attr in INTROSPECTION or attr.startswith("co_"):
            self._add(node, f".{attr}: reaches the interpreter's frames or code; the rule does not allow it")
        elif attr.startswith("__") and attr.endswith("__"):
            if attr not in DUNDERS:
                self._add(node, f".{attr}: a dunder attribute the rule does not allow (allowed: {_dunders_hint()})")
        elif (
            attr.startswith("_")
            and not self._own_receiver(receiver, attr)
            and attr not in self.own
            and attr not in NAMEDTUPLE_API
        ):
            self._add(node, f".{attr}: a private attribute of an object your package did not define")

    def _own_receiver(self, node: ast.AST, attr: str | None = None) -> bool:
        """self, cls, the package's own names, or super() in the method of the same name (an override)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
            return attr is not None and attr == self.function
        return isinstance(node, ast.Name) and (node.id in ("self", "cls") or node.id in self.packages)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.libraries and isinstance(node.ctx, ast.Load) and _is_module(self.libraries[node.id]):
            self._add(node, f"{self.libraries[node.id]} used as a value: name what you use from it (module.name)")
        elif node.id in FORBIDDEN_BUILTINS | NAME_FUNCTIONS and node.id not in self.libraries | dict.fromkeys(
            self.packages
        ):
            self._add(node, f"{node.id}: {_builtin_hint(node.id)}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in NAME_FUNCTIONS and func.id not in self.libraries:
            self._name_function(node, func.id)
            for child in [*node.args, *node.keywords]:
                self.visit(child)
            return
        if isinstance(func, ast.Name) and func.id == "vars" and self._own_namespace(node):
            for child in node.args:
                self.visit(child)  # vars(state): an object's own fields, as dataclasses.asdict reads them
            return
        self.generic_visit(node)

    def _own_namespace(self, node: ast.Call) -> bool:
        """vars(name) of a plain local name (no library, module or attribute chain)."""
        (arg,) = node.args if len(node.args) == 1 and not node.keywords else (None,)
        return isinstance(arg, ast.Name) and arg.id not in self.libraries and arg.id not in self.packages

    def _name_function(self, node: ast.Call, function: str) -> None:
        """getattr(obj, "name") and friends: a literal name the attribute rule allows on obj."""
        name = node.args[1] if len(node.args) > 1 else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            if node.args and self._own_receiver(node.args[0]) and not self.packages & {node.args[0].id}:
                return  # getattr(self, name): the object's own attributes
            self._add(node, f"{function} with a name computed at run time: write the attribute (obj.name)")
            return
        self._attribute_of_value(ast.copy_location(ast.Attribute(node.args[0], name.value, ast.Load()), node))
        if isinstance(node.args[0], ast.Name) and node.args[0].id in self.libraries:
            self._add(node, f"{function} on {self.libraries[node.args[0].id]}: write the name (module.name)")

    def _define(self, node) -> None:
        if node.name in FORBIDDEN_DEFS:
            self._add(node, f"defines {node.name}: a hook the rule does not allow")
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    visit_FunctionDef = visit_AsyncFunctionDef = _define

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
                self.unit = (first, stmt.end_lineno)
            else:
                self.unit = None
            self.visit(stmt)
        self.unit = None


# namedtuple's public methods and fields, underscored so as not to clash with field names
NAMEDTUPLE_API = frozenset("_asdict _fields _replace _make _field_defaults".split())
INTROSPECTION = frozenset(
    "gi_frame gi_code gi_yieldfrom cr_frame cr_code cr_await ag_frame ag_code f_back f_globals f_locals "
    "f_builtins f_code f_trace tb_frame tb_next func_globals".split()
)


def _modules_hint() -> str:
    return "see cs336_basics/source_rule.py, ALLOWED_MODULES"


def _dunders_hint() -> str:
    return ", ".join(sorted(DUNDERS)[:8]) + ", ..."


def _path_hint(path: str) -> str:
    if path.startswith("torch"):
        return (
            "not an elementary tensor operation or tool the rule allows; write it from elementary operations "
            "(torch.exp, torch.sum, torch.matmul, ...: cs336_basics/elementary_ops.py)"
        )
    return "a name the rule does not allow (no private parts, no code that runs what it is handed)"


def _builtin_hint(name: str) -> str:
    if name in NAME_FUNCTIONS:
        return f"{name} only as a call with a literal public name: write the attribute (obj.name)"
    return "runs or reaches code by name at run time; the rule does not allow it"


# What a violation costs: naming a forbidden library function costs the components that ran the
# def it is in; anything else (an import, a module as a value, a name resolved at run time, a
# dunder or private attribute, a hook) could switch off what watches a component, so it costs
# every component, as does any violation outside a def (it runs at import).
NAMES_ONLY = "names "


def check_source(
    source: str, rel: str, own: frozenset[str] = frozenset(), tree: ast.AST | None = None
) -> list[Violation]:
    """The violations of one file's text (rel: its path, for the message; tree: its parse, if done)."""
    if tree is None:
        try:
            tree = parse(source)
        except (SyntaxError, ValueError) as e:
            return [Violation(rel, getattr(e, "lineno", 0) or 0, "does not parse", "", None)]
    visitor = _Visitor(own)
    visitor.visit(tree)
    lines = source.splitlines()
    out = {}
    for line, what, unit in sorted(visitor.found, key=lambda f: (f[0], f[1])):
        code = lines[line - 1].strip()[:160] if 0 < line <= len(lines) else ""
        out.setdefault((line, what), Violation(rel, line, what, code, unit))
    return list(out.values())


# CPython 3.11 keeps one AST recursion counter per interpreter (python/cpython#106905): a parse
# that runs while another is building its tree (in another thread, or in a finalizer the garbage
# collector runs in the middle of it) fails with "AST constructor recursion depth mismatch". The
# grader checks submissions in threads, so every parse of its checks takes PARSING (static_check,
# vendored, the handout's stubs, the grader's traceback formatting), and a parse that one outside
# the lock raced runs again.
PARSING = threading.RLock()
_RACED = "AST constructor recursion depth mismatch"
PARSE_TRIES = 3


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse(source), one at a time (PARSING); again when a parse outside the lock raced it."""
    for attempt in range(PARSE_TRIES):
        with PARSING:
            try:
                return ast.parse(source, filename)
            except SystemError as e:
                if _RACED not in str(e) or attempt == PARSE_TRIES - 1:
                    raise


def format_exc(limit: int | None = None) -> str:
    """traceback.format_exc(limit) under PARSING: on CPython 3.11 formatting a traceback parses
    each line it underlines."""
    import traceback

    with PARSING:
        return traceback.format_exc(limit=limit)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


GIVEN_MANIFEST = "given.json"  # in the handout's package: what the handout gives (Given)
BEGIN = "# BEGIN " + "SOLUTION"  # split: the handout check finds no marker in this file


@dataclass(frozen=True)
class Given:
    """What the handout gives: files it gives whole ({path: sha256}, not checked while unchanged)
    and, in files with solution regions, its own lines that break the rule ({path: stripped lines})."""

    files: dict
    lines: dict


def _region_lines(text: str) -> set[int]:
    """The 1-based line numbers inside solution regions, markers included."""
    inside, lines = False, set()
    for number, line in enumerate(text.splitlines(), 1):
        inside = inside or line.strip().startswith(BEGIN)
        if inside:
            lines.add(number)
        inside = inside and not line.strip().startswith("# END " + "SOLUTION")
    return lines


def given_by(package_dir: Path) -> Given:
    """The Given of a package with its solution regions (the reference): the files without a
    region, and in the others the lines outside every region that the rule would name."""
    package_dir, files, lines = Path(package_dir), {}, {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).parts
        if {"staff", "__pycache__"} & set(parts):
            continue
        rel = "/".join((package_dir.name, *parts))
        text = path.read_text(encoding="utf-8", errors="replace")
        regions = _region_lines(text)
        if not regions:
            files[rel] = digest(text)
        else:
            lines[rel] = sorted({v.code for v in check_source(text, rel) if v.line not in regions})
    return Given(files, lines)


def given_of(package_dir: Path) -> Given:
    """The handout's manifest in a student's package; in the staff repository, computed."""
    import json

    manifest = Path(package_dir) / GIVEN_MANIFEST
    if manifest.is_file():
        return Given(**json.loads(manifest.read_text()))
    return given_by(package_dir)


def check_package(package_dir: Path, given: Given | None = None) -> list[Violation]:
    """The violations in every .py file of the package that is not a given file unchanged, less
    the handout's own lines (`given`: by default given_of(package_dir)). Only the staff
    repository's own package (no manifest, no `given`) may keep code the rule skips, in staff/."""
    package_dir = Path(package_dir)
    skipped = (
        {"__pycache__", "staff"} if given is None and not (package_dir / GIVEN_MANIFEST).is_file() else {"__pycache__"}
    )
    given = given_of(package_dir) if given is None else given
    texts = {}
    for path in sorted(package_dir.rglob("*.py")):
        inside = path.relative_to(package_dir)  # the package's own folders, never the parents'
        if path.is_symlink() or not path.is_file() or skipped & set(inside.parts):
            continue
        rel = f"{package_dir.name}/{inside.as_posix()}"
        text = path.read_text(encoding="utf-8", errors="replace")
        if given.files.get(rel) != digest(text):
            texts[rel] = text
    trees = {}
    for rel, text in texts.items():
        try:
            trees[rel] = parse(text)
        except (SyntaxError, ValueError):
            trees[rel] = None
    own = defined_names([t for t in trees.values() if t is not None])
    return [
        v
        for rel, text in texts.items()
        for v in check_source(text, rel, own, trees[rel])
        if v.code not in set(given.lines.get(rel, ()))
    ]


def costs_every_component(violation: Violation) -> bool:
    """A violation outside any def, or one that could hide what ran: it costs every component."""
    return violation.unit is None or not violation.what.startswith(NAMES_ONLY)


def costs(violation: Violation, entered: set[tuple[str, int]]) -> bool:
    """Whether `violation` costs a component that entered the code objects `entered`
    ((path, first line) of each def of the package it ran)."""
    if costs_every_component(violation):
        return True  # the tensor-parallel worker's own process may run none of the package's defs
    first, last = violation.unit
    return any(path == violation.path and first <= line <= last for path, line in entered)


def explain(violations: list[Violation], limit: int = 5) -> str:
    """The message a student sees: each line that breaks the rule, what it does, what to use."""
    shown = "\n".join(str(v) for v in violations[:limit])
    more = f"\n  ... and {len(violations) - limit} more" if len(violations) > limit else ""
    return (
        f"your package's source breaks the rule on what it may name (cs336_basics/source_rule.py):\n{shown}{more}\n"
        "Every component that runs code from these lines scores 0 until they are fixed "
        "(README.md, 'The one rule')."
    )
