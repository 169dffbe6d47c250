"""The worker: a child process that runs a submission's code on the graded inputs.

It is forked from a server that has imported torch (so starting one is cheap) and never
runs in the grader's process. It enters the sandbox (sandbox.py), forgets every
`cs336_basics` module it inherited, runs the grader's copy of tests/adapter_checks.py (the
checks the adapters call; it imports nothing of the package) into sys.modules, imports the
submission's package through the grader's pristine copy of tests/adapters.py, and for each
component, in order, calls the adapter on each case's inputs and saves what came back to
<home>/<case>.safetensors: the output tensor (`output`) and, as string metadata, the torch calls
recorded (builtin_guard) or an error text; it appends a progress line after the import and
after each component, by which the grader times components (protocol.py names each file, line
and key). It never sees an expected value: the grader compares, in its own process.

Unless its job runs a component that starts processes (GradingConfig.starts_processes: the
tensor-parallel ranks), it installs a second seccomp filter before the submission is imported,
refusing every new thread and process (the recorder sees only the calling thread); each output
is materialised as a plain contiguous tensor inside the recorded region. The adapters launch
process groups with the grader's copy of the launcher (given code: launch.py), inside
`launch.recording_ranks()`: each rank installs that filter once its group is up, runs under the
same recorder, and sends its record back; a case's calls are its own and every rank's, and a rank
that sent none fails it.
"""

import functools
import gc
import importlib
import json
import os
import sys
import threading
import traceback
import types
from dataclasses import dataclass

from safetensors.torch import save_file  # bound now: the submission may patch the module

from cs336_basics import builtin_guard as _guard  # the grader's copy: bound before the submission's package exists
from cs336_basics.nn.parallel import launch as _launch  # the grader's launcher, likewise
from cs336_basics.serial_pools import serial_pools as _serial_pools  # process pools in process, likewise
from cs336_basics.staff.grader import environment, protocol, seccomp
from cs336_basics.staff.grader.sandbox import SandboxSpec, enter
from cs336_basics.staff.grader.sanitize import clean

MAX_ELEMENTS = 2**22  # outputs are compared with fixtures of at most a few thousand elements
MAX_CALLS = 1000  # distinct torch functions and operators recorded per case
MAX_ENTERED = 5000  # defs of the package recorded as run per case (source_rule.costs)
MAX_LIBRARY_CALLS = 20  # forbidden library calls kept per case (call_rule.RECORD_CHARS each at most)
CHECKS = "adapter_checks"  # tests/adapter_checks.py, the graded scenarios, as adapters.py imports it
CHECKS_BINDING = "checks"  # the name adapters.py binds it to


def worker_batch(plan: list, starts_processes: frozenset[str]) -> list:
    """The leading components of plan ([(component, cases), ...]) that one worker runs together:
    those that start processes (GradingConfig.starts_processes, e.g. tensor-parallel ranks) each
    alone, in the only kind of worker that may, the others as many as follow each other."""
    if plan[0][0] in starts_processes:
        return plan[:1]
    n = next((i for i, (component, _) in enumerate(plan) if component in starts_processes), len(plan))
    return plan[:n]


class Tampered(Exception):
    """The submission's code changed the adapters or the call recorder: nothing it returns is graded."""


@dataclass(frozen=True)
class WorkerJob:
    spec: SandboxSpec
    log_path: str  # stdout and stderr, appended
    code_dir: str  # holds cs336_basics/ (the submission's), adapters.py and adapter_checks.py (the grader's)
    inputs_dir: str  # <case>.pt: the adapter's keyword arguments
    cases: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # ((component, ((case, adapter), ...)), ...)
    cpu_seconds: int
    may_start_processes: bool = False  # False: a seccomp filter refuses new threads and processes


def _error_text(exc: BaseException, code_dir: str) -> str:
    """The exception, after the frames of the student's package and the adapters; the grader's
    and library frames are left out, except the innermost. Host paths are left for the grader
    to hide (sanitize.hide_paths: it must, whatever the student's code writes)."""
    root = code_dir.rstrip("/") + "/"
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for i, f in enumerate(frames) if f.filename.startswith(root) or i == len(frames) - 1][-6:]
    text = "".join(
        [
            "Traceback (most recent call last):\n",
            *traceback.StackSummary.from_list(mine).format(),
            *traceback.format_exception_only(type(exc), exc),
        ]
    )
    return clean(text, protocol.ERROR_CHARS)  # no lone surrogate (safetensors' metadata is UTF-8)


def _forget_inherited_modules(code_dir: str) -> None:
    """Drop the grader's own cs336_basics (inherited through the fork) and let only the sandbox's
    code directory, the standard library and the installed packages be importable."""
    for name in list(sys.modules):
        if name.split(".")[0] in ("cs336_basics", "tests", "adapters", CHECKS):
            del sys.modules[name]
    sys.path[:] = [code_dir] + environment.import_dirs()
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.dont_write_bytecode = True


def _pristine(code_dir: str, name: str):
    """tests/<name>.py compiled from the grader's copy before any student code runs: a fresh
    top-level module (never looked up in sys.modules) and the code object each of its functions
    must have."""
    path = os.path.join(code_dir, f"{name}.py")
    with open(path) as f:
        code = compile(f.read(), f"{name}.py", "exec")
    module = types.ModuleType(name)
    module.__file__, module.__package__ = path, ""  # top level: a relative import fails at once
    expected = {c.co_name: c for c in code.co_consts if isinstance(c, types.CodeType)}
    return code, module, expected


def _pristine_checks(code_dir: str) -> tuple[types.ModuleType, dict, dict]:
    """tests/adapter_checks.py run from the grader's copy before any student code runs (it imports
    only the standard library, NumPy and torch): the module, the code object each of its
    functions must have, and the function each made."""
    code, module, expected = _pristine(code_dir, CHECKS)
    exec(code, module.__dict__)
    functions = {name: module.__dict__.get(name) for name in expected}
    return module, expected, functions


def _state(namespace: dict) -> dict:
    """{name: the objects that must stay the same}: each value, and a function's code and defaults."""
    state = {}
    for name, value in namespace.items():
        if type(value) is types.FunctionType:
            kw = value.__kwdefaults__ or {}
            state[name] = (value, value.__code__, value.__defaults__, *kw.keys(), *kw.values())
        else:
            state[name] = (value,)
    return state


def _check_state(namespace: dict, state: dict, what: str) -> None:
    """Every name of the module's namespace is bound to what _state saw, no name added or removed."""
    now = _state(namespace)
    changed = sorted(n for n in now.keys() | state.keys() if len(now.get(n, ())) != len(state.get(n, ()))
                     or any(a is not b for a, b in zip(now.get(n, ()), state.get(n, ()), strict=True)))  # fmt: skip
    if changed:
        raise Tampered(f"your package's code changed {', '.join(changed[:5])} in the grader's {what}")


def _use_graders_launcher(namespace: dict) -> None:
    """The adapters start process groups with the grader's launch module, not the submission's
    copy of that given file: the one that records each rank."""
    if "launch" in namespace:
        namespace["launch"] = _launch


def _check_adapters(namespace: dict, expected: dict, functions: dict, what: str = "adapter") -> None:
    """Every function of the module is the one compiled from the grader's copy and still in its
    namespace, and the adapters launch ranks with the grader's launcher."""
    for name, code in expected.items():
        fn = functions.get(name)
        if type(fn) is not types.FunctionType or fn.__code__ is not code or namespace.get(name) is not fn:
            raise Tampered(f"the grader's {what} {name} was replaced by your package's code")
    if "launch" in namespace and namespace["launch"] is not _launch:
        raise Tampered("the grader's launcher in the adapters was replaced by your package's code")


def _rank_sandbox() -> None:
    """In each rank, once its process group is up: no new thread or process (as in a worker)."""
    seccomp.install_no_new_tasks()


def _check_recorder(methods: list) -> None:
    for cls, name, fn, code in methods:
        if cls.__dict__.get(name) is not fn or fn.__code__ is not code:
            raise Tampered("the grader's call recorder or launcher was replaced by your package's code")


def _snapshot(kwargs: dict) -> dict:
    """Copies of every tensor argument (and of every tensor in a dict argument), by name."""
    import torch

    flat = {}
    for arg, value in kwargs.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, t in items:
            if isinstance(t, torch.Tensor):
                flat[arg if key is None else f"{arg}[{key!r}]"] = (t, t.detach().clone())
    return flat


def _changed(snapshot: dict) -> list[str]:
    """The names of the arguments whose values now differ from their copies (NaN equals NaN)."""
    import torch

    def same(a, b) -> bool:
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())

    return [name for name, (now, before) in snapshot.items() if not same(now, before)]


def _recorder_methods(guard) -> list:
    """(class or module, name, function, code) of every method of the call recorder and the
    launcher, taken before the submission runs: what _check_recorder compares against."""
    return [
        (cls, name, cls.__dict__[name], cls.__dict__[name].__code__)
        for cls, name in (
            (guard.CallRecorder, "__enter__"),
            (guard.CallRecorder, "__exit__"),
            (guard.CallRecorder, "_intact"),
            (guard._FunctionRecorder, "__torch_function__"),
            (guard._DispatchRecorder, "__torch_dispatch__"),
            (guard._DispatcherObserver, "__enter__"),
            (guard._DispatcherObserver, "__exit__"),
            *((_launch, name) for name in ("launch", "_rank_main", "_recorded_call", "run_sharded", "_sharded_output")),
            (guard.call_rule.LibraryCallTracer, "__enter__"),
            (guard.call_rule.LibraryCallTracer, "__exit__"),
            (guard.call_rule.LibraryCallTracer, "intact"),
            (guard.call_rule.LibraryCallTracer, "_make_hook"),
            (guard.call_rule.LibraryCallTracer, "_judge_call"),
            (guard.call_rule.LibraryCallTracer, "_judge_c_call"),
            (guard.call_rule.LibraryCallTracer, "_on_collection"),
            (guard.call_rule.LibraryCallTracer, "_forged"),
        )
    ]


@dataclass
class Graded:
    """The submission's adapters as imported, the grader's checks they call, and what both must
    still be for each case."""

    module: types.ModuleType  # the adapters module (the grader's copy, run once)
    expected: dict  # {adapter name: the code object compiled from the grader's copy}
    functions: dict  # {adapter name: the function the import left in the module}
    recorder_methods: list  # _recorder_methods(), taken before the import
    checks: types.ModuleType  # adapter_checks (the grader's copy, run before the import)
    checks_expected: dict  # {function name: its code object compiled from the grader's copy}
    checks_functions: dict  # {function name: the function the grader's run of it made}
    states: dict  # {"adapters" or CHECKS: _state of its namespace, once the grader's copy ran}
    tampered: str | None = None  # why nothing is graded (the submission changed the grader's code)

    def check(self) -> None:
        """Raise Tampered unless the adapters, their checks and the recorder are still the grader's."""
        _check_adapters(self.module.__dict__, self.expected, self.functions)
        if self.module.__dict__.get(CHECKS_BINDING) is not self.checks:
            raise Tampered(f"your package replaced the grader's {CHECKS} module in the adapters")
        _check_adapters(self.checks.__dict__, self.checks_expected, self.checks_functions, f"{CHECKS} function")
        _check_state(self.module.__dict__, self.states["adapters"], "adapters")
        _check_state(self.checks.__dict__, self.states[CHECKS], CHECKS)
        _check_recorder(self.recorder_methods)


def main(job: WorkerJob) -> None:
    # What the worker inherited from the forkserver (torch's Python objects) is never collected:
    # a full collection writes to every object it visits, copying each inherited page into this
    # worker's cgroup (~65 MB, at whichever case triggers it).
    gc.freeze()
    guard = _guard  # held in a local: the module is dropped from sys.modules below
    recorder_methods = _recorder_methods(guard)
    enter(job.spec, job.log_path, job.cpu_seconds)  # notes for the grader, as root: protocol.SANDBOX_NOTES_FILE
    import torch

    torch.set_num_threads(1)
    progress = open(protocol.PROGRESS_FILE, "a", buffering=1)
    if (problem := environment.problem()) is not None:  # as the worker's user: nothing could run
        with open(protocol.GRADER_BROKEN_FILE, "w") as f:
            f.write(problem)
        progress.write(protocol.GRADER_BROKEN + "\n")
        return
    if job.spec.isolate and not job.may_start_processes:
        seccomp.install_no_new_tasks()  # an OSError here ends the worker: nothing runs unrecorded
    threads = threading.active_count()  # before the submission's import: a thread it starts is caught
    graded = _import_submission(job, progress, recorder_methods)
    if graded is None:
        return
    progress.write(protocol.READY + "\n")
    for component, cases in job.cases:
        for case, adapter in cases:
            kwargs = torch.load(os.path.join(job.inputs_dir, protocol.input_file(case)), weights_only=True)
            tensors, meta = _run_case(job, torch, guard, graded, (component, adapter), kwargs, threads)
            _save(case, adapter, tensors, meta)
        progress.write(protocol.done(component) + "\n")


def _import_submission(job: WorkerJob, progress, recorder_methods: list) -> Graded | None:
    """Import the submission's package through the grader's adapters (its import-time code runs
    here, after protocol.STARTED); None, with protocol.IMPORT_FAILED written, if the import raised."""
    code, module, expected = _pristine(job.code_dir, "adapters")
    _forget_inherited_modules(job.code_dir)
    checks, checks_expected, checks_functions = _pristine_checks(job.code_dir)
    states = {CHECKS: _state(checks.__dict__)}
    sys.modules[CHECKS] = checks  # where adapters.py's import finds it, no finder asked
    sys.modules["adapters"] = module
    progress.write(protocol.STARTED + "\n")  # the submission's code runs from here on
    try:
        exec(code, module.__dict__)  # imports the submission's package: its import-time code runs here
    except BaseException as e:  # noqa: BLE001 - anything the student's import raises, SystemExit included
        with open(protocol.IMPORT_ERROR_FILE, "w") as f:
            f.write(_error_text(e, job.code_dir))
        progress.write(protocol.IMPORT_FAILED + "\n")
        return None
    _use_graders_launcher(module.__dict__)
    states["adapters"] = _state(module.__dict__)
    functions = {name: module.__dict__.get(name) for name in expected}
    graded = Graded(module, expected, functions, recorder_methods, checks, checks_expected, checks_functions, states)
    try:
        graded.check()
        for name, pristine in (("adapters", module), (CHECKS, checks)):
            if sys.modules.get(name) is not pristine:
                raise Tampered(f"your package replaced the grader's {name} module (sys.modules[{name!r}])")
    except Tampered as e:
        graded.tampered = str(e)
    return graded


def _run_case(job: WorkerJob, torch, guard, graded: Graded, call: tuple[str, str], kwargs: dict, threads: int):
    """(tensors, metadata) to save for one case: the output and the calls recorded, or an error
    text (TAMPERED set when the submission changed the grader's code). call: (component, adapter)."""
    component, adapter = call
    try:
        if graded.tampered:
            raise Tampered(graded.tampered)
        graded.check()
        originals = _snapshot(kwargs)
        out, recorder, ranks = _recorded_call(job, torch, guard, graded.functions[adapter], kwargs)
        changed = _changed(originals)
        graded.check()
        if threading.active_count() > threads:
            raise Tampered("your code started a thread; graded code must run in the thread that calls it")
        return _outcome(torch, guard, component, adapter, out, recorder.calls | ranks.calls, changed, recorder, ranks)
    except (Tampered, guard.RecordingTampered) as e:
        return {}, {protocol.ERROR: str(e), protocol.TAMPERED: protocol.YES}
    except BaseException as e:  # noqa: BLE001
        return {}, {protocol.ERROR: _error_text(e, job.code_dir)}


def _recorded_call(job: WorkerJob, torch, guard, adapter_fn, kwargs: dict):
    """(output, this process's recorder, the ranks' records) of one adapter call, every torch call
    recorded here and in each rank it starts."""
    package_dir = os.path.join(job.code_dir, "cs336_basics")  # the student's code, for the call rule
    recorder = guard.CallRecorder(package_dir=package_dir)
    rank_setup = _rank_sandbox if job.spec.isolate else None
    rank_recorder = functools.partial(guard.CallRecorder, package_dir=package_dir)
    with _launch.recording_ranks(rank_recorder, rank_setup) as ranks, _serial_pools(), recorder:
        out = adapter_fn(**kwargs)
        # a plain tensor's values, computed here, while recording: a subclass could
        # compute them when touched later, unseen
        if type(out) is torch.Tensor and out.numel() <= MAX_ELEMENTS:
            out = out.detach().contiguous().clone()
    if ranks.recorded != ranks.started:
        raise Tampered(
            f"{ranks.started - ranks.recorded} of the {ranks.started} ranks your code started "
            "sent back no record of their calls"
        )
    return out, recorder, ranks


def _outcome(torch, guard, component, adapter, out, recorded, changed, recorder, ranks) -> tuple[dict, dict]:
    """(tensors, metadata) of a call that ran: the banned calls first (a flood of other names must
    not push them past the cap), library calls (call_rule's records) at most MAX_LIBRARY_CALLS."""
    banned = guard.forbidden_calls(component, recorded)
    library = [c for c in banned if guard.call_rule.callee_of(c) is not None][:MAX_LIBRARY_CALLS]
    banned = [c for c in banned if guard.call_rule.callee_of(c) is None] + library
    others = [c for c in recorded - set(banned) if guard.call_rule.callee_of(c) is None]
    calls = banned + sorted(others)[:MAX_CALLS]
    operators = recorder.operators + ranks.operators
    entered = sorted(recorder.entered)[:MAX_ENTERED]
    meta = {
        protocol.CALLS: json.dumps(calls),
        protocol.OPERATORS: str(operators),
        protocol.ENTERED: json.dumps(entered),
    }
    if changed:
        meta[protocol.ERROR] = (
            f"{adapter} changed its input {', '.join(changed)} in place: kernels and "
            "modules must leave their inputs unchanged (compute into new tensors)"
        )
    elif isinstance(out, torch.Tensor) and out.numel() > MAX_ELEMENTS:
        meta[protocol.ERROR] = f"{adapter} returned a tensor of shape {tuple(out.shape)}: too large to check"
    elif type(out) is torch.Tensor:
        return {protocol.OUTPUT: out}, meta
    else:
        meta[protocol.ERROR] = f"{adapter} returned a {type(out).__name__}, not a plain torch.Tensor"
    return {}, meta


def _save(case: str, adapter: str, tensors: dict, meta: dict) -> None:
    """The case's output file; if it cannot be written (a dtype safetensors cannot store, a full
    disk), one holding only an error text; if neither, none (the grader says no output was saved)."""
    try:
        save_file(tensors, protocol.output_file(case), metadata=meta)
    except Exception as e:  # noqa: BLE001 - e.g. a dtype safetensors cannot store
        meta = {protocol.ERROR: f"{adapter}: its output could not be saved ({type(e).__name__}; a full disk?)"}
        try:
            save_file({}, protocol.output_file(case), metadata=meta)
        except Exception:  # noqa: BLE001 - the grader reports "no output was saved"
            pass
