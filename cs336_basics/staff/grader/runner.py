"""The grader's side of the workers: start one, time each component by the worker's progress
lines, and on a timeout or a death kill it (its process group and every process of its user)
and go on with a fresh worker for the components still to run.

Workers are forked by a multiprocessing forkserver that has imported torch (one per grader
process, shared by all submissions it grades), so a worker starts in milliseconds instead of
the seconds `import torch` takes. The forkserver never runs student code. Nothing a worker
sends is unpickled: progress is a text file (only its exact `ready`/`done`/`import-failed` lines
count; staff notes come from a file the worker wrote as root), outputs are safetensors files
(grade.read_output) and every text is cleaned and capped (sanitize.py).
"""

import dataclasses
import multiprocessing
import os
import signal
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cs336_basics.staff.grader import cgroup, sandbox
from cs336_basics.staff.grader.sanitize import MAX_TEXT_CHARS, clean, decode
from cs336_basics.staff.grader.worker import WorkerJob, main, worker_batch

POLL_S = 0.02
_CONTEXT = multiprocessing.get_context("forkserver")
# torch._dynamo: the builtin guard's TorchDispatchMode imports it on its first operator (3 s)
_CONTEXT.set_forkserver_preload(["torch", "torch._dynamo", "numpy", "einops", "jaxtyping", "safetensors"])


def start_forkserver() -> None:
    """Start the forkserver now, so its `import torch` overlaps the grader's own."""
    from multiprocessing import forkserver

    forkserver.ensure_running()


@dataclass
class ComponentRun:
    finished: bool  # the worker reported `done <component>`
    message: str = ""  # why not
    home: Path | None = None  # where its outputs are: the worker's directory


def read_worker_file(path: Path, uid: int | None, limit: int = 1 << 20) -> bytes | None:
    """The bytes of a regular file written by the worker, without following symlinks (nor
    blocking on a FIFO); None if absent or anything else. Under isolation the file must belong to
    the worker's user and have no other links."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        if uid is not None and info.st_uid != uid:
            return None
        return f.read(limit)


_HOST_PATHS = sorted({(str(Path(__file__).resolve().parents[3]), "<grader>"), (sys.prefix, "<python>"),
                      (sys.base_prefix, "<python>")}, key=lambda p: -len(p[0]))
MAX_PROGRESS_BYTES = 1 << 16  # `ready`, `done <component>`, ...: a few hundred bytes
MAX_NOTES_BYTES = 1 << 12


def log_tail(path: Path, lines: int = 12, chars: int = 1500) -> str:
    """The last lines of a worker's stdout and stderr (shown with a timeout or a crash)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8 * chars))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    for path, name in _HOST_PATHS:  # no host path in a message a student sees
        text = text.replace(path, name)
    tail = "\n".join(clean(text).strip().splitlines()[-lines:])
    return clean(tail, chars)


def _exit_text(code: int | None) -> str:
    """How a worker ended, from its exit code (negative: killed by that signal)."""
    if code is None:
        return "was still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {"SIGKILL": " (killed: perhaps it ran out of memory)", "SIGXCPU": " (CPU time limit)",
                "SIGXFSZ": " (it wrote a file larger than the limit)", "SIGSEGV": " (a crash in native code)"}
        return f"was killed by {name}{hint.get(name, '')}"
    return f"exited with code {code}"


class Runner:
    """Runs components in order in as few workers as possible; see run()."""

    def __init__(self, sandbox_root: Path, log_dir: Path, code_dir: Path, inputs_dir: Path, spec: sandbox.SandboxSpec,
                 reveal: bool = True, starts_processes: frozenset[str] = frozenset({"parallel"})):
        self.starts_processes = starts_processes  # components run alone, in workers that may start processes
        self.root, self.log_dir, self.code_dir, self.inputs_dir = sandbox_root, log_dir, code_dir, inputs_dir
        self.spec = spec
        # False for workers that saw hidden inputs: their messages hold no text the student's code
        # produced (no output tail, no exit code, no import error), only fixed sentences
        self.reveal = reveal
        self.notes: list[str] = []
        self.workers = 0  # started so far
        self.seconds: dict[str, float] = {}  # wall time of the first startup and of each finished component
        self.budget_end = float("inf")  # set by run(): when the whole submission's time is up
        self.cgroup: cgroup.Cgroup | None = None  # the current worker's
        self.peak_mb = 0.0  # the highest memory peak of a worker's cgroup (staff notes)
        if spec.isolate and sandbox.is_root():
            self.notes += [f"detached the home of a grader that died: {p}" for p in sandbox.remove_stale_homes()]
            self.notes += [f"removed the cgroup of a grader that died: {p}" for p in cgroup.remove_stale()]

    def run(self, plan: list[tuple[str, list[tuple[str, str]]]]) -> dict[str, ComponentRun]:
        """plan: [(component, [(case, adapter), ...]), ...]. Returns each component's ComponentRun."""
        runs: dict[str, ComponentRun] = {}
        remaining = list(plan)
        self.budget_end = time.monotonic() + self.spec.limits.total_s
        while remaining:
            if time.monotonic() >= self.budget_end:
                message = (f"not run: the grading time budget of {self.spec.limits.total_s:g} s for the whole "
                           f"submission ran out before this component (earlier ones were slow or hung).")
                return runs | {c: ComponentRun(False, message) for c, _ in remaining}
            done = self._one_worker(worker_batch(remaining, self.starts_processes))
            runs.update(done)
            remaining = [p for p in remaining if p[0] not in runs]
        if self.peak_mb:
            self.notes.append(f"highest memory of a worker's cgroup: {self.peak_mb:.0f} MB "
                              f"(limit {self.spec.limits.resident_mb} MB)")
        return runs

    def _start(self, plan, log: Path, home: Path):
        """A fresh worker with its own empty directory (the only place it may write)."""
        home.mkdir(mode=0o700)
        if self.spec.uid is not None:
            os.chown(home, self.spec.uid, self.spec.uid)
        if self.spec.isolate and not sandbox.mount_home(home, self.spec.uid, self.spec.limits):
            self.notes.append("disk not limited: no tmpfs for the worker's home (needs root)")
        limits = self.spec.limits
        self.cgroup = None
        if self.spec.isolate and sandbox.is_root():
            try:
                self.cgroup = cgroup.create(limits.resident_mb, limits.processes, limits.cpus)
            except OSError as e:
                self.notes.append(f"no cgroup: memory, processes and CPU are limited by rlimits only ({e})")
        cpu = int(limits.startup_s + limits.time_per_component_s * len(plan)) + 5
        spec = dataclasses.replace(self.spec, home=str(home), cgroup=self.cgroup)
        job = WorkerJob(spec, str(log), str(self.code_dir), str(self.inputs_dir),
                        tuple((c, tuple(cases)) for c, cases in plan), cpu,
                        may_start_processes=any(c in self.starts_processes for c, _ in plan))
        # not a daemon: a daemonic process may not start children, and the parallel component's
        # adapters start process groups; the runner kills and joins every worker itself
        process = _CONTEXT.Process(target=main, args=(job,), daemon=False)
        process.start()
        return process

    def _one_worker(self, plan) -> dict[str, ComponentRun]:
        """Run plan's components in one worker until all are done or one fails; returns those decided."""
        self.workers += 1
        home, log = self.root / f"work-{self.workers}", self.log_dir / f"worker-{self.workers}.log"
        process = self._start(plan, log, home)
        runs: dict[str, ComponentRun] = {}
        ready, seen = False, 0
        deadline = time.monotonic() + self.spec.limits.startup_s
        try:
            while len(runs) < len(plan):
                process.join(POLL_S)
                alive = process.is_alive()
                raw = read_worker_file(home / "progress", self.spec.uid, limit=MAX_PROGRESS_BYTES)
                lines = (raw or b"").decode(errors="replace").split("\n")
                for line in (lines[:-1] if alive else lines)[seen:]:  # a live worker's last line may be partial
                    seen += 1
                    if line == "import-failed":
                        error = decode(read_worker_file(home / "import_error.txt", self.spec.uid, limit=4 * MAX_TEXT_CHARS))
                        message = ("importing your cs336_basics package failed:\n" + error.strip() if self.reveal
                                   else "importing your cs336_basics package failed (the public tests show why)")
                        return {c: ComponentRun(False, message) for c, _ in plan}
                    elif line == "ready" and not ready:
                        self.seconds.setdefault("startup", time.monotonic() - (deadline - self.spec.limits.startup_s))
                        ready, deadline = True, time.monotonic() + self.spec.limits.time_per_component_s
                        self.notes += self._sandbox_notes(home)
                        self.notes.append("sandbox: " + sandbox.describe(process.pid, dataclasses.replace(self.spec, cgroup=self.cgroup)))
                    elif ready and len(runs) < len(plan) and line == f"done {plan[len(runs)][0]}":
                        runs[plan[len(runs)][0]] = ComponentRun(True, home=home)
                        now = time.monotonic()
                        self.seconds[plan[len(runs) - 1][0]] = now - (deadline - self.spec.limits.time_per_component_s)
                        deadline = now + self.spec.limits.time_per_component_s
                if len(runs) < len(plan) and (not alive or time.monotonic() > min(deadline, self.budget_end)):
                    rest = [c for c, _ in plan[len(runs):]]
                    oom = self.cgroup is not None and not alive and self.cgroup.usage().out_of_memory
                    return runs | self._failure(rest, ready, None if alive else process.exitcode, log, oom)
            return runs
        finally:
            sandbox.kill_group(process.pid)
            sandbox.kill_user(self.spec.uid)
            process.join(5)
            if self.cgroup is not None:
                usage = self.cgroup.usage()
                self.peak_mb = max(self.peak_mb, usage.peak_bytes / 2**20)
                if not self.cgroup.remove():
                    self.notes.append(f"could not remove the worker's cgroup {self.cgroup.dirs[0]}")

    def _sandbox_notes(self, home: Path) -> list[str]:
        """The worker's notes on its sandbox, from the file it wrote as root before running student code."""
        raw = read_worker_file(home / sandbox.NOTES_FILE, None if self.spec.uid is None else 0, limit=MAX_NOTES_BYTES)
        if raw is None:
            return ["sandbox: the worker's notes on its sandbox are missing"]
        return [clean(line, 300) for line in raw.decode(errors="replace").splitlines() if line.strip()]

    def _failure(self, rest: list[str], ready: bool, exitcode: int | None, log: Path,
                 oom: bool = False) -> dict[str, ComponentRun]:
        """Before `ready` every remaining component fails; after it, only the one that was running.
        oom: the worker's cgroup reached its memory limit (a fixed sentence, also for hidden cases)."""
        limits, tail = self.spec.limits, log_tail(log) if self.reveal else ""
        tail = f"\nlast lines of its output:\n{tail}" if tail else ""
        if oom:
            what = f"while running {rest[0]}" if ready else "while importing your package"
            message = (f"the grading process ran out of memory {what}: it and the processes it started may hold "
                       f"at most {limits.resident_mb} MB, memory-backed files (memfd, /tmp, /dev/shm, its "
                       f"directory) included; it was killed.")
            if not ready:
                return {c: ComponentRun(False, message + " No component could run.") for c in rest}
            return {rest[0]: ComponentRun(False, f"{message} Any remaining components ran in a fresh process.{tail}")}
        if not ready:
            what = (f"did not finish importing your package within {limits.startup_s:g} s" if exitcode is None
                    else f"{_exit_text(exitcode)} while importing your package" if self.reveal
                    else "ended while importing your package")
            return {c: ComponentRun(False, f"the grading process {what}; no component could run.{tail}") for c in rest}
        component = rest[0]
        if exitcode is None:
            message = (f"{component} did not finish within the time limit of {limits.time_per_component_s:g} s "
                       f"(an infinite loop?); it was stopped and scores 0.")
        elif not self.reveal:
            message = f"the grading process ended while running {component}, before finishing it."
        else:
            message = (f"the grading process {_exit_text(exitcode)} while running {component}, before finishing "
                       f"it (did your code call exit() or os._exit()?).")
        return {component: ComponentRun(False, f"{message} Any remaining components ran in a fresh process.{tail}")}
