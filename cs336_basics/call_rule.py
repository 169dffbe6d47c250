"""What a submission's code may call while a graded component runs: the positive rule.

The rule: the student's code (the files of its `cs336_basics` package) may call elementary tensor
operations (torch, Tensor methods, torch.nn.functional's elementary forms), Python's built-ins and
standard library, NumPy (not numpy.random: random numbers come from torch's generators), einops,
jaxtyping and regex, and its own package. From torch.nn only Module, Parameter, the containers and
torch.nn.init; from torch.optim only the Optimizer base class. Everything else (torch.nn's layers
and losses, torch.nn.utils, torch.optim's optimizers and schedulers, torch.utils.data, any other
package: tokenizers, tiktoken, sentencepiece, transformers, scipy, ...) computes what the
component is to compute, and calling it fails the case. RULE below is that rule as a table
(longest dotted prefix wins); ALLOWED_IN adds what one component may call besides.

The check is at the call: a profile hook (sys.setprofile, per thread, only while a component
runs) sees each Python function entered and each C function called. A call is judged when its
caller, or any frame behind it (through library and standard-library frames), is the student's code
and its callee is not allowed by RULE; each such call is recorded as "<callee> at <file>:<line>:
<source line>", the student's line that made it. Which component may make it is decided later,
by builtin_guard.forbidden_calls, with `allowed_in`. C methods are judged by their object's type.
Code the garbage collector runs is not a call the student made: a collection can start at any
allocation of the student's code, and the finalizers it runs (a library's abandoned generator
closed, a `__del__`) enter with the student's frame as their caller. While a collection runs,
those outermost finalizer frames are skipped, and the search for the student's frame stops at
them; what the student's own code calls is judged as always. The collection callback checks
that a real collection ran (gc's own count), so calling it by hand is recorded. A frame is the
student's by its file in the package, or by the module namespace it runs in (a code object can
claim any file, globals any __name__; the module objects cannot be forged). Not seen: functions
compiled by Cython (numpy.random's), which make no profile event on Python 3.11, and C
functions called from C (map, functools.reduce); the source rule (source_rule.py) keeps such
names out of the student's code, and the operators they run are judged below (elementary_ops).
"""

import functools
import gc
import linecache
import os
import sys
import types
from collections.abc import Callable
from types import MappingProxyType

ALLOWED, FORBIDDEN = True, False

# dotted module or function prefix -> may the submission's code call it (longest prefix wins;
# a name matching no entry is a package outside the standard library: FORBIDDEN)
RULE = MappingProxyType(
    {
        **{name: ALLOWED for name in sys.stdlib_module_names},
        "builtins": ALLOWED,
        "sys.setprofile": FORBIDDEN,  # the hook that records these calls
        "threading.setprofile": FORBIDDEN,
        "gc.callbacks": FORBIDDEN,  # the recorder's collection callback, if the student's code calls it
        "torch": ALLOWED,  # elementary tensor operations; the built-ins a component may not call: BANNED
        "torch.nn": FORBIDDEN,  # layers, losses, torch.nn.utils (clip_grad_norm_, ...)
        "torch.nn.parameter": ALLOWED,
        "torch.nn.modules.module": ALLOWED,
        "torch.nn.modules.container": ALLOWED,
        "torch.nn.modules.linear.Identity": ALLOWED,  # computes nothing: a removed layer's stand-in
        "torch.nn.modules.dropout": ALLOWED,  # a random mask no component computes (nn.Dropout(0.0) is inert)
        "torch.nn.init": ALLOWED,
        "torch.nn.functional": ALLOWED,  # elementary forms; the banned ones: BANNED, per component
        "torch.optim": FORBIDDEN,  # optimizers, their functional forms, lr_scheduler
        "torch.optim.optimizer": ALLOWED,  # the Optimizer base class a student subclasses
        "torch.utils.data": FORBIDDEN,  # samplers and loaders
        "torch.serialization": FORBIDDEN,  # torch.save / torch.load: checkpoint's (ALLOWED_IN)
        "torch.hub": FORBIDDEN,
        "torch.distributed.tensor": FORBIDDEN,  # DTensor's tensor parallelism: the parallel oracle
        "torch.distributed._tensor": FORBIDDEN,
        "torch.distributed.nn": FORBIDDEN,  # autograd-aware collectives: the comm operators' built-ins
        "numpy": ALLOWED,  # memmaps and arrays (get_batch)
        "numpy.random": FORBIDDEN,
        "einops": ALLOWED,
        "jaxtyping": ALLOWED,
        "beartype": ALLOWED,  # jaxtyping's run-time checks (the staff suite)
        "?": ALLOWED,  # code built at run time outside any module (beartype's wrappers); exec: static_check
        "typing_extensions": ALLOWED,
        "regex": ALLOWED,  # GPT-2's pre-tokenizer pattern (train_bpe, tokenizer)
        "tqdm": ALLOWED,  # progress bars
        "_regex": ALLOWED,  # its compiled patterns and matches
        "torch.distributed": FORBIDDEN,  # collectives: parallel's (ALLOWED_IN)
        "torch.distributed.checkpoint": FORBIDDEN,  # state dicts of a model and its optimizer
    }
)

# component -> prefixes its code may call besides RULE's
ALLOWED_IN = MappingProxyType(
    {
        "checkpoint": ("torch.serialization",),  # the handout's write_checkpoint / read_checkpoint
        # the handout's launcher reads the ranks' outputs with torch.load; the ranks communicate
        "parallel": ("torch.serialization", "torch.distributed"),
    }
)

IMPORT_SYSTEM = "<frozen importlib."  # importlib._bootstrap's frames: what they run is an import
SOURCE_CHARS = 120
RECORD_CHARS = 400  # a record at most: the grader's output header holds a few dozen


def verdict(name: str, rule=RULE) -> bool:
    """RULE's verdict on a dotted name: the entry of its longest prefix, FORBIDDEN if none."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        found = rule.get(".".join(parts[:i]))
        if found is not None:
            return found
    return FORBIDDEN


def callee_of(record: str) -> str | None:
    """The callee of a record written by LibraryCallTracer ("<callee> at <where>"), None for other
    names (torch functions and operators never hold " at ")."""
    callee, at, _ = record.partition(" at ")
    return callee if at else None


@functools.cache
def rule_for(component: str | None) -> MappingProxyType:
    """RULE with `component`'s ALLOWED_IN entries added (None: every component's): RULE's longer
    FORBIDDEN prefixes still win (torch.distributed.checkpoint, in parallel)."""
    extra = ALLOWED_IN.get(component, ()) if component else [p for ps in ALLOWED_IN.values() for p in ps]
    return MappingProxyType({**RULE, **dict.fromkeys(extra, ALLOWED)})


def allowed_in(component: str, callee: str) -> bool:
    """Whether `component` may call `callee`, one of RULE's forbidden names (ALLOWED_IN)."""
    return verdict(callee, rule_for(component))


def _module_of(frame) -> str:
    name = frame.f_globals.get("__name__")
    return name if isinstance(name, str) else "?"


def _module_at(filename: str, roots: tuple[str, ...], frame) -> str:
    """The dotted module a file is, by its place under the longest sys.path entry holding it
    (globals can be forged, a library file's place cannot); code without a file (frozen modules,
    code built at run time) by its globals' __name__."""
    if filename.startswith(os.sep):
        real = os.path.realpath(filename)
        root = next((r for r in roots if real.startswith(r)), None)
        if root is not None:
            parts = real[len(root) :].removesuffix(".py").split(os.sep)
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return _module_of(frame)


def _function_name(frame, module: str) -> str:
    """module.qualname of the function running in `frame`; a decorator's wrapper
    (`_no_grad.<locals>._no_grad_wrapper`) names the one function it wraps, if it holds one."""
    qualname = frame.f_code.co_qualname
    if "<locals>" in qualname:
        wrapped = [
            v
            for v in frame.f_locals.values()
            if isinstance(v, types.FunctionType) and v.__code__ is not frame.f_code and "<locals>" not in v.__qualname__
        ]
        if len(wrapped) == 1:
            qualname = wrapped[0].__qualname__
    return f"{module}.{qualname}"


def _c_function_name(fn) -> str:
    """module.name of a C function or a C method (by its object's type or class)."""
    owner = getattr(fn, "__self__", None)
    module = getattr(fn, "__module__", None)
    if not isinstance(module, str):
        cls = owner if isinstance(owner, type) else type(owner)
        module = f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"
    return f"{module}.{getattr(fn, '__name__', '?')}"


def _search_roots() -> tuple[str, ...]:
    """sys.path's directories, real paths ending in a separator, longest first."""
    roots = {os.path.realpath(p) + os.sep for p in sys.path if p and os.path.isdir(p)}
    return tuple(sorted(roots, key=len, reverse=True))


def _library_roots() -> tuple[str, ...]:
    """The directories installed libraries and the standard library live in (real paths)."""
    import sysconfig

    paths = sysconfig.get_paths()
    found = {os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    found |= {os.path.realpath(p) + os.sep for p in sys.path if p and os.path.basename(p) == "site-packages"}
    return tuple(sorted(found))


# what a code object is, as a caller (LibraryCallTracer._kind)
_LIBRARY, _STUDENT, _NO_FILE = 0, 1, 3


class LibraryCallTracer:
    """While active (in the thread that entered it), records each call the code under
    `package_dir` makes into code RULE forbids, as "<callee> at <file>:<line>: <source line>"
    (file relative to package_dir's parent) in `calls`. The tracer's own files and `exclude`
    (the recorder's, whose modes call torch on the student's behalf) are neither the student's
    code nor forbidden. Decisions are cached per code object, C function, class and file."""

    def __init__(self, calls: set[str], package_dir: str, exclude: tuple[str, ...] = (), through: tuple[str, ...] = ()):
        self.calls = calls
        self.root = os.path.realpath(package_dir) + os.sep
        self.package = os.path.basename(self.root.rstrip(os.sep))
        self.exclude = frozenset({os.path.realpath(__file__), *map(os.path.realpath, exclude)})
        self.through = frozenset(map(os.path.realpath, through))  # the grader's own code a call passes through
        self._roots = _search_roots()
        self._libraries = _library_roots()
        self._files: dict = {}  # filename -> (real path or None, the student's?)
        self._kinds: dict = {}  # code object -> _LIBRARY, _STUDENT or _NO_FILE
        self._package_globals: frozenset[int] = frozenset()  # ids of the package's modules' namespaces
        self._wheres: dict = {}  # (code object, line) -> "file:line: source"
        self._forbidden_codes: dict = {}  # code object -> the forbidden callee's name
        self._modules: dict = {}  # filename -> the dotted module it is
        self.entered: set[tuple[str, int]] = set()  # (path, first line) of each of the package's defs run
        self._previous = None
        self._forking = None  # (frame, instruction) of the last os.fork call
        self._interrupted = None  # while a collection runs: the frame it interrupted
        self._collections = 0  # gc's count of collections when the running one started
        self.hook: Callable = self._make_hook()

    def __enter__(self) -> "LibraryCallTracer":
        self._package_globals = frozenset(
            id(module.__dict__)
            for name, module in list(sys.modules.items())
            if (name == self.package or name.startswith(self.package + "."))
            and self._file(str(getattr(module, "__file__", None) or "?"))[0] not in self.exclude
        )
        self._previous = sys.getprofile()
        gc.callbacks.append(self._on_collection)
        sys.setprofile(self.hook)
        return self

    def intact(self) -> bool:
        """The hook is still the thread's profile function."""
        return sys.getprofile() is self.hook

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._previous)
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        if self._interrupted is not None:  # a "start" no collection ended
            self._forged(self._interrupted)

    def _on_collection(self, phase: str, info: dict) -> None:
        """gc's callback: remember the frame a collection interrupted, until it stops. A start within
        a collection, or a stop after none, did not come from gc: the student's code called it."""
        collections = sum(g["collections"] for g in gc.get_stats())
        caller = sys._getframe(1)
        if phase == "start" and self._interrupted is None:
            self._interrupted, self._collections = caller, collections
        elif phase == "stop" and self._interrupted is not None and collections == self._collections + 1:
            self._interrupted = None
        else:
            self._forged(caller)
            self._interrupted = None

    def _forged(self, frame) -> None:
        self.calls.add(f"gc.callbacks at {self._where(frame)}"[:RECORD_CHARS])

    def _file(self, filename: str) -> tuple[str | None, bool]:
        found = self._files.get(filename)
        if found is None:
            real = os.path.realpath(filename) if filename.startswith(os.sep) else None
            mine = real is not None and real.startswith(self.root) and real not in self.exclude
            found = self._files[filename] = (real, mine)
        return found

    def _module(self, frame) -> str:
        filename = frame.f_code.co_filename
        if not filename.startswith(os.sep):
            return _module_of(frame)
        module = self._modules.get(filename)
        if module is None:
            module = self._modules[filename] = _module_at(filename, self._roots, frame)
        return module

    def _kind(self, frame) -> int:
        code = frame.f_code
        real, mine = self._file(code.co_filename)
        if mine:
            kind = _STUDENT
        elif id(frame.f_globals) in self._package_globals:
            kind = _STUDENT  # a code object whose file is forged, running in one of the package's modules
        elif real is None:
            kind = _NO_FILE
        else:
            kind = _LIBRARY
        self._kinds[code] = kind
        return kind

    def _is_students(self, frame) -> bool:
        """The student's code: a file of the package, or code running in one of its modules'
        namespaces (the module object itself, not the __name__ or file its globals or code claim)."""
        code = frame.f_code
        kind = self._kinds.get(code)
        if kind is None:
            kind = self._kind(frame)
        if kind == _NO_FILE:
            return id(frame.f_globals) in self._package_globals
        return kind == _STUDENT

    def _relative(self, filename: str) -> str:
        """A file of the package as source_rule names it: cs336_basics/nn/functional.py."""
        real, _ = self._file(filename)
        return f"{self.package}/{real[len(self.root) :]}".replace(os.sep, "/")

    def _where(self, frame) -> str:
        key = (frame.f_code, frame.f_lineno)
        found = self._wheres.get(key)
        if found is None:
            filename, line = key[0].co_filename, key[1]
            real, mine = self._file(filename)
            shown = os.path.relpath(real, os.path.dirname(self.root.rstrip(os.sep))) if mine else filename
            source = linecache.getline(filename, line).strip()[:SOURCE_CHARS]
            found = self._wheres[key] = f"{shown}:{line}: {source}" if source else f"{shown}:{line}"
        return found

    def _student_behind(self, frame):
        """The nearest of the student's frames from `frame` outwards, through library and standard
        library frames (a helper that calls what it is handed, torch code that calls a function it
        was given, a frame whose code claims another file), or None: whose call this is."""
        while frame is not None:
            if self._is_students(frame):
                return frame
            real, _ = self._file(frame.f_code.co_filename)
            if real is not None and not real.startswith(self._libraries) and real not in self.through:
                return None  # the harness, the tests or the recorder: not a library a call passes through
            if self._interrupted is not None and frame.f_back is self._interrupted:
                return None  # a library's finalizer the garbage collector runs: not the interrupted code's call
            if frame.f_code in self._forbidden_codes:
                return None  # inside a forbidden call, recorded where it was made
            if self._forking is not None and frame is self._forking[0] and frame.f_lasti == self._forking[1]:
                return None  # inside os.fork: its at-fork hooks (os.register_at_fork) are the interpreter's calls
            if frame.f_code.co_filename.startswith(IMPORT_SYSTEM):
                return None  # a module being imported (a library's lazy import): no call of the student's
            frame = frame.f_back
        return None

    def _callee(self, frame) -> str | None:
        """The name of the function `frame` runs if RULE forbids it, else None. Code built at run
        time (exec, a wrapper a library makes) is no library: what it calls is judged as called by
        the frames behind it."""
        code = frame.f_code
        try:
            real, _ = self._file(code.co_filename)
            if self._is_students(frame) or real in self.exclude or real in self.through or real is None:
                found = None  # the package's own code, the recorder's, or code built at run time (whoever built it)
            else:
                name = _function_name(frame, self._module(frame))
                found = None if verdict(name) else name
        except Exception:  # noqa: BLE001 - a frame whose globals or locals resist reading
            found = f"{code.co_filename}:{code.co_name}"
        return found

    def _c_callee(self, fn, owner) -> str | None:
        """The name of the C function `fn` (bound to `owner`) if RULE forbids it, else None; an
        allowed one joins the hook's fast path (its owner's type, or the function itself)."""
        try:
            name = _c_function_name(fn)
            own = name.startswith(self.package + ".")  # a C method of the package's own class (autograd.Function.apply)
            forbidden = not own and not verdict(name)
        except Exception:  # noqa: BLE001 - an object whose type or names resist reading
            return f"{type(owner).__name__}.?"
        if forbidden:
            return name
        if fn is os.fork:  # judged at every call: the hooks it runs are not the caller's calls
            return None
        if owner is None or type(owner) is types.ModuleType or isinstance(owner, type):
            if type(owner) is not type or owner.__module__ == "builtins":  # classmethods: builtins' only
                self._allowed_functions.add(fn)
        else:
            self._allowed_types.add(type(owner))  # C methods are judged by their object's type
        return None

    def _judge_c_call(self, frame, fn, owner) -> None:
        if fn is os.fork:
            self._forking = (frame, frame.f_lasti)
        callee = self._c_callee(fn, owner)
        if callee is not None and self._is_students(frame):  # C: the caller only (stdio's flush under fork)
            self.calls.add(f"{callee[:200]} at {self._where(frame)}"[:RECORD_CHARS])

    def _judge_call(self, frame) -> None:
        """A Python function was entered: record it if RULE forbids it and the student called it."""
        code = frame.f_code
        callee = self._forbidden_codes.get(code) or self._callee(frame)
        if callee is None:
            self._allowed_codes.add(code)
            if self._kinds.get(code) == _STUDENT and self._file(code.co_filename)[1]:  # source_rule.costs
                self.entered.add((self._relative(code.co_filename), code.co_firstlineno))
            return
        if "<locals>" not in code.co_qualname:  # a decorator's wrapper names what it wraps: each time
            self._forbidden_codes[code] = callee
        if self._interrupted is not None and frame.f_back is self._interrupted:
            return  # a finalizer the garbage collector runs, not a call of the interrupted code
        student = self._student_behind(frame.f_back)
        if student is not None:
            self.calls.add(f"{callee[:200]} at {self._where(student)}"[:RECORD_CHARS])

    def _make_hook(self) -> Callable:
        """The profile function. Its fast path (one set lookup) passes every call whose callee is
        known to be allowed: most events of elementary or pure-Python code."""
        allowed_codes, allowed_types, allowed_functions = set(), set(), set()
        self._allowed_codes, self._allowed_types, self._allowed_functions = (
            allowed_codes,
            allowed_types,
            allowed_functions,
        )
        judge_call, judge_c_call, module_types = self._judge_call, self._judge_c_call, (types.ModuleType, type(None))

        def hook(frame, event, arg):
            if event == "c_call":
                owner = arg.__self__
                kind = type(owner)
                if kind in allowed_types or (kind in module_types and arg in allowed_functions):
                    return
                judge_c_call(frame, arg, owner)
            elif event == "call":
                if frame.f_code not in allowed_codes:
                    judge_call(frame)

        return hook
