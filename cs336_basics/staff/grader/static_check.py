"""A static check of a submission's source, for staff review: the lines that name a banned
PyTorch built-in or the machinery that could hide one from the recorder (builtin_guard).

The recorder in the worker is the rule; this check is its second pair of eyes, on the text.
It parses every .py file of the submitted cs336_basics package (ast, never imports or runs it)
and reports each line that
  - names a built-in some component may not call (builtin_guard.BANNED), by any public alias:
    torch.X, torch.nn.functional.X (imported under any name), torch.special.X,
    torch.ops.aten.X, `from torch.nn.functional import X`, or a method call `t.X(...)` on a
    value that is not one of the package's own modules;
  - names library code that call_rule.RULE lets no component call (torch.nn.utils.clip_grad_norm_,
    torch.optim.AdamW, torch.nn.CrossEntropyLoss, `import tokenizers`, numpy.random, ...), as
    the object the name resolves to in the libraries this process imported;
  - reaches the machinery that can switch the recorder off or run code it does not see:
    torch._C (dispatch-key guards, mode stacks), torch.library and torch.ops other than aten,
    torch.overrides / torch.utils._python_dispatch / the profiler, __torch_dispatch__ and
    __torch_function__ (tensor subclasses, modes), ctypes, threads and processes (threading,
    _thread, multiprocessing, concurrent, subprocess, os.fork and friends), and code built at
    run time (exec, eval, compile, __import__, importlib, sys.modules, gc, inspect);
  - starts a def that copies a library's own function, renamed or reformatted (grader/vendored.py).
Lines the handout gives students (everything outside the solution regions, e.g. the
tensor-parallel launcher that forks ranks) are not reported while they are unchanged: a finding
whose line, stripped, is one of the findings of the same file in the handout is the handout's.
So the reference, restored into the handout, has no finding (tests/staff/test_hostile.py).

A finding is not a verdict: it costs no points (the recorder and source_rule.py decide scores); grade.py puts the
findings in the staff console and results.json's `extra_data` and a hidden test, never in a
student-visible output.
"""

import ast
import importlib
import sys
import types
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cs336_basics import call_rule
from cs336_basics.builtin_guard import BANNED
from cs336_basics.source_rule import parse

MAX_FINDINGS = 50  # per submission: enough to review, bounded for results.json
MAX_CODE_CHARS = 160

_SHORT = {"F": "torch.nn.functional", "aten": "torch.ops.aten", "Tensor": "Tensor"}
# every banned built-in, as a full dotted path (torch.nn.functional.silu, torch.ops.aten.silu, ...)
BANNED_PATHS = frozenset(
    (_SHORT[name.split(".")[0]] + name[name.index(".") :]) if name.split(".")[0] in _SHORT else name
    for names in BANNED.values()
    for name in names
)
BANNED_METHODS = frozenset(p.split(".", 1)[1] for p in BANNED_PATHS if p.startswith("Tensor."))
# dotted prefixes (and modules) whose use is reported wherever it appears
MACHINERY = {
    "torch._C": "torch internals (dispatch-key guards, mode stacks)",
    "torch.library": "a custom operator (torch.library)",
    "torch.overrides": "torch-function modes (torch.overrides)",
    "torch.utils._python_dispatch": "dispatch modes (torch.utils._python_dispatch)",
    "torch._ops": "torch internals (torch._ops)",
    "torch._dispatch": "torch internals (torch._dispatch)",
    "torch.autograd.profiler": "the profiler",
    "torch.autograd.profiler_legacy": "the profiler",
    "torch.autograd._disable_profiler": "the profiler",
    "torch.autograd._disable_profiler_legacy": "the profiler",
    "torch.autograd._enable_profiler_legacy": "the profiler",
    "torch.profiler": "the profiler",
    "torch.Tensor._make_wrapper_subclass": "a tensor subclass",
    "torch.Tensor._make_subclass": "a tensor subclass",
    "ctypes": "native code (ctypes)",
    "_ctypes": "native code (ctypes)",
    "cffi": "native code (cffi)",
    "threading": "a thread (threading)",
    "_thread": "a thread (_thread)",
    "multiprocessing": "another process (multiprocessing)",
    "concurrent": "threads or processes (concurrent.futures)",
    "subprocess": "another process (subprocess)",
    "os.fork": "another process (os.fork)",
    "os.forkpty": "another process (os.forkpty)",
    "os.posix_spawn": "another process (os.posix_spawn)",
    "os.posix_spawnp": "another process (os.posix_spawnp)",
    "os.system": "another process (os.system)",
    "os.popen": "another process (os.popen)",
    "os.register_at_fork": "fork hooks (os.register_at_fork)",
    "pty": "another process (pty)",
    "signal": "signal handlers",
    "importlib": "code imported at run time (importlib)",
    "sys.modules": "the module table (sys.modules)",
    "sys._getframe": "stack frames (sys._getframe)",
    "sys.settrace": "a tracer (sys.settrace)",
    "sys.setprofile": "a tracer (sys.setprofile)",
    "gc": "the garbage collector's object lists (gc)",
    "inspect": "stack frames and live objects (inspect)",
    "builtins": "the builtins module",
    "marshal": "code objects (marshal)",
    "mmap": "shared memory (mmap)",
}
for _name in (
    "replace",
    "rename",
    "renames",
    "remove",
    "unlink",
    "chmod",
    "chown",
    "truncate",
    "link",
    "symlink",
    "ftruncate",
    "utime",
):
    MACHINERY[f"os.{_name}"] = f"a file changed in place (os.{_name}): the grader's records are files"
MACHINERY["shutil"] = "files copied or moved (shutil)"
MACHINERY["safetensors.torch.save_file"] = "a safetensors file written: the grader's records are such files"
MACHINERY["safetensors.torch.save"] = "a safetensors file written: the grader's records are such files"
# method calls that write files whatever the receiver (pathlib.Path and friends)
WRITING_METHODS = {
    "write_bytes",
    "write_text",
    "unlink",
    "rename",
    "replace",
    "chmod",
    "touch",
    "symlink_to",
    "hardlink_to",
}
for _name in (
    "execv",
    "execve",
    "execvp",
    "execvpe",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "spawnv",
    "spawnve",
    "spawnvp",
    "spawnvpe",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "write",
    "open",
    "fdopen",
    "dup2",
):
    MACHINERY[f"os.{_name}"] = f"a process or file descriptor call (os.{_name})"
CALLED_BUILTINS = {
    "exec": "code built at run time (exec)",
    "eval": "code built at run time (eval)",
    "compile": "code built at run time (compile)",
    "__import__": "a module imported at run time",
    "globals": "the module's globals (globals())",
    "vars": "an object's namespace (vars())",
}
DUNDERS = {
    "__torch_dispatch__": "a tensor subclass or dispatch mode (__torch_dispatch__)",
    "__torch_function__": "a tensor subclass or function mode (__torch_function__)",
}


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the submission's root: cs336_basics/nn/functional.py
    line: int
    what: str  # what the line reaches, e.g. "torch.rms_norm: a banned built-in (rmsnorm)"
    code: str  # the line, stripped and capped

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} | {self.code}"


def _banned_for(path: str) -> str:
    """The components whose banned list holds the built-in at `path`."""
    names = {path, "F." + path.removeprefix("torch.nn.functional."), "aten." + path.removeprefix("torch.ops.aten.")}
    return ", ".join(c for c, banned in BANNED.items() if banned & names) or "a component"


def _library_name(path: str) -> str:
    """Where the library object a dotted path names lives (torch.nn.CrossEntropyLoss ->
    torch.nn.modules.loss.CrossEntropyLoss), resolved in modules this process has imported;
    the path itself where it cannot be resolved (a package not imported here)."""
    parts = path.split(".")
    if parts[0] in ("torch", "numpy"):  # the libraries whose public names alias their modules
        importlib.import_module(parts[0])
    obj = sys.modules.get(parts[0])
    for part in parts[1:]:
        if obj is None:
            return path
        obj = getattr(obj, part, None) or sys.modules.get(f"{getattr(obj, '__name__', '')}.{part}")
    if obj is None:
        return path
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and isinstance(qualname, str) else path


def _forbidden_library(path: str) -> str | None:
    """The library name `path` resolves to if no component may call it (call_rule), else None."""
    name = _library_name(path)
    return None if call_rule.verdict(name, call_rule.rule_for(None)) else name


def _machinery(path: str) -> str | None:
    for prefix, what in MACHINERY.items():
        if path == prefix or path.startswith(prefix + "."):
            return what
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, package: str):
        self.package = package  # the submission's top-level package: its own modules are never torch
        self.aliases: dict[str, str] = {}  # local name -> dotted path it was imported as
        self.found: list[tuple[int, str]] = []

    def _dotted(self, node) -> str | None:
        """The dotted path an expression names (torch.nn.functional.silu), resolving import aliases."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def _report_path(self, node, path: str) -> None:
        if path.startswith("torch.Tensor."):
            path = path.removeprefix("torch.")
        parts = path.split(".")
        banned = next((p for p in (".".join(parts[:i]) for i in range(len(parts), 1, -1)) if p in BANNED_PATHS), None)
        if banned is not None:  # torch.ops.aten.silu.default: its prefix torch.ops.aten.silu
            self.found.append((node.lineno, f"{banned}: a built-in {_banned_for(banned)} may not call"))
        elif path.startswith("torch.ops.") and not path.startswith("torch.ops.aten") and path != "torch.ops":
            self.found.append((node.lineno, f"{path}: an operator outside aten (a custom op)"))
        elif (what := _machinery(path)) is not None:
            self.found.append((node.lineno, f"{path}: {what}"))
        elif path.split(".")[0] != self.package and (library := _forbidden_library(path)) is not None:
            self.found.append((node.lineno, f"{path}: library code the call rule forbids ({library})"))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )
            self._report_path(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:  # the package's own modules
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{self.package}.{node.module or ''}.{alias.name}"
            return
        for alias in node.names:
            path = f"{node.module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = path
            self._report_path(node, path)
        if _machinery(node.module) and not any(_machinery(f"{node.module}.{a.name}") for a in node.names):
            self._report_path(node, node.module)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = self._dotted(node)
        if path is not None and not path.startswith(self.package):
            self._report_path(node, path)
            return  # the chain's inner attributes are prefixes of this one
        if node.attr in DUNDERS:
            self.found.append((node.lineno, DUNDERS[node.attr]))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            path = self.aliases[node.id]
            if not path.startswith(self.package) and "." in path:
                self._report_path(node, path)  # e.g. `silu` from `from torch.nn.functional import silu`

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in CALLED_BUILTINS and func.id not in self.aliases:
            self.found.append((node.lineno, CALLED_BUILTINS[func.id]))
        if isinstance(func, ast.Attribute) and func.attr in BANNED_METHODS and self._dotted(func) is None:
            self.found.append(
                (node.lineno, f"Tensor.{func.attr}: a built-in {_banned_for('Tensor.' + func.attr)} may not call")
            )
        if (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and len(node.args) >= 2
            and not isinstance(node.args[1], ast.Constant)
        ):
            self.found.append((node.lineno, "getattr with a name computed at run time"))
        if isinstance(func, ast.Name) and func.id == "open" and "open" not in self.aliases and _writes(node):
            self.found.append((node.lineno, "a file opened for writing: the grader's records are files"))
        if (
            isinstance(func, ast.Attribute)
            and func.attr in WRITING_METHODS
            and self._dotted(func) is None
            and not (func.attr == "replace" and _str_replace(node))
        ):
            self.found.append((node.lineno, f".{func.attr}(): a file written or moved: the grader's records are files"))
        self.generic_visit(node)

    def _define(self, node) -> None:
        if node.name in DUNDERS:
            self.found.append((node.lineno, DUNDERS[node.name]))
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _define


def _writes(call: ast.Call) -> bool:
    """open(...) with a mode that may write (w, a, x, +) or one computed at run time."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return False
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and not set(mode.value) & set("wax+"))


def _str_replace(call: ast.Call) -> bool:
    """x.replace(a, b): str.replace (two arguments), not Path.replace (one)."""
    return len(call.args) >= 2


def findings_of(source: str, rel: str, package: str = "cs336_basics") -> list[Finding]:
    """The findings of one file's text (rel: its path, for the report). A file that does not parse
    is one finding: the grader's import reports the error to the student."""
    try:
        tree = parse(source)  # one at a time in the process (source_rule.PARSING says why)
    except (SyntaxError, ValueError) as e:
        return [Finding(rel, getattr(e, "lineno", 0) or 0, "does not parse", "")]
    visitor = _Visitor(package)
    visitor.visit(tree)
    lines = source.splitlines()
    out = {}
    for line, what in sorted(visitor.found):
        code = lines[line - 1].strip()[:MAX_CODE_CHARS] if 0 < line <= len(lines) else ""
        out.setdefault((line, what), Finding(rel, line, what, code))
    return list(out.values())


@cache
def _given(rel: str) -> frozenset[str]:
    """The stripped lines of the handout's own findings in file rel (the reference's file with its
    solution regions stubbed); empty if the handout has no such file."""
    from cs336_basics import REPO
    from cs336_basics.staff.handout import stub_text

    path = REPO / rel
    if not path.is_file():
        return frozenset()
    text = stub_text(path)
    return frozenset(f.code for f in findings_of(text, rel))


def check_package(package_dir: Path) -> list[Finding]:
    """The findings in every .py file under package_dir (a submission's cs336_basics/), minus the
    handout's own lines, sorted by file and line, at most MAX_FINDINGS."""
    package_dir = Path(package_dir)
    out = []
    for path in sorted(package_dir.rglob("*.py")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = f"{package_dir.name}/{path.relative_to(package_dir).as_posix()}"
        try:
            source = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        given = _given(rel)
        out += [f for f in findings_of(source, rel, package_dir.name) if f.code not in given]
    return (out + _vendored(package_dir))[:MAX_FINDINGS]


def _vendored(package_dir: Path) -> list[Finding]:
    """The package's functions that copy a library's (vendored.py), as findings for review."""
    from cs336_basics.staff.grader.vendored import handout_text, vendored_findings

    out = []
    for v in vendored_findings(package_dir, handout_text):
        lines = (package_dir.parent / v.path).read_text(encoding="utf-8", errors="replace").splitlines()
        code = lines[v.line - 1].strip()[:MAX_CODE_CHARS] if 0 < v.line <= len(lines) else ""
        out.append(Finding(v.path, v.line, f"copies {v.library_function} ({v.shared:.0%} of its fingerprints)", code))
    return out
