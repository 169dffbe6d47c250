"""The worker: a child process that runs a submission's code on the graded inputs.

It is forked from a server that has imported torch (so starting one is cheap) and never
runs in the grader's process. It enters the sandbox (sandbox.py), forgets every
`cs336_basics` module it inherited, imports the submission's package through the grader's
pristine copy of tests/adapters.py, and for each component, in order, calls the adapter on
each case's inputs and saves what came back to <home>/<case>.pt: the output tensor, or
{"error": text}. It appends `ready` to <home>/progress after the import and `done
<component>` after each component; the grader times components by these lines. It never sees
an expected value: the grader compares, in its own process.
"""

import importlib
import os
import sys
import traceback
from dataclasses import dataclass

from cs336_basics.staff.grader.sandbox import SandboxSpec, enter

MAX_ERROR_CHARS = 2000
MAX_ELEMENTS = 2**22  # outputs are compared with fixtures of at most a few thousand elements


@dataclass(frozen=True)
class WorkerJob:
    spec: SandboxSpec
    log_path: str  # stdout and stderr, appended
    code_dir: str  # holds cs336_basics/ (the submission's) and adapters.py (the grader's)
    inputs_dir: str  # <case>.pt: the adapter's keyword arguments
    cases: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # ((component, ((case, adapter), ...)), ...)
    cpu_seconds: int


def _error_text(exc: BaseException, code_dir: str) -> str:
    """The exception, after the frames of the student's package and the adapters (paths relative
    to the sandbox); the grader's and library frames are left out, except the innermost."""
    root = code_dir.rstrip("/") + "/"
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for i, f in enumerate(frames) if f.filename.startswith(root) or i == len(frames) - 1][-6:]
    for f in mine:
        f.filename = f.filename.removeprefix(root)
    text = "".join(["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(mine).format(),
                    *traceback.format_exception_only(type(exc), exc)])
    return text if len(text) <= MAX_ERROR_CHARS else "...\n" + text[-MAX_ERROR_CHARS:]


def _forget_inherited_modules(code_dir: str) -> None:
    """Drop the grader's own cs336_basics (inherited through the fork) and let only the sandbox's
    code directory, the standard library and the installed packages be importable."""
    for name in list(sys.modules):
        if name.split(".")[0] in ("cs336_basics", "tests", "adapters"):
            del sys.modules[name]
    prefixes = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    sys.path[:] = [code_dir] + [p for p in sys.path if p and os.path.realpath(p).startswith(prefixes)]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.dont_write_bytecode = True


def main(job: WorkerJob) -> None:
    notes = enter(job.spec, job.log_path, job.cpu_seconds)
    import torch

    torch.set_num_threads(1)
    progress = open("progress", "a", buffering=1)
    progress.write("".join(f"note {n}\n" for n in notes))
    _forget_inherited_modules(job.code_dir)
    try:
        adapters = importlib.import_module("adapters")
    except BaseException as e:  # noqa: BLE001 - anything the student's import raises, SystemExit included
        with open("import_error.txt", "w") as f:
            f.write(_error_text(e, job.code_dir))
        progress.write("import-failed\n")
        return
    progress.write("ready\n")
    for component, cases in job.cases:
        for case, adapter in cases:
            kwargs = torch.load(os.path.join(job.inputs_dir, f"{case}.pt"), weights_only=True)
            try:
                out = getattr(adapters, adapter)(**kwargs)
                if isinstance(out, torch.Tensor) and out.numel() > MAX_ELEMENTS:
                    result = {"error": f"{adapter} returned a tensor of shape {tuple(out.shape)}: too large to check"}
                elif isinstance(out, torch.Tensor):
                    result = out.detach().cpu().clone().as_subclass(torch.Tensor)
                else:
                    result = {"error": f"{adapter} returned a {type(out).__name__}, not a torch.Tensor"}
            except BaseException as e:  # noqa: BLE001
                result = {"error": _error_text(e, job.code_dir)}
            torch.save(result, f"{case}.pt")
        progress.write(f"done {component}\n")
