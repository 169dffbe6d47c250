"""The grader's side of the workers: start one, time each component by the worker's progress
lines, and on a timeout or a death kill it (its process group and every process of its user)
and go on with a fresh worker for the components still to run.

Time is counted in CPU seconds the worker and every process it started used (its cgroup's
cpu.stat or cpuacct.usage; without a cgroup, /proc's utime + stime of its process tree and its
user), so a loaded machine or half a CPU slows a component without failing it; a wall-clock
ceiling far above (Limits.wall_per_component_s) stops only hangs, and one wall-clock budget
(Limits.total_s) bounds the whole grading, public and hidden workers together. Components of
Limits.network_components run in workers of their own (their seccomp filter allows AF_INET).
A worker's stdout and stderr go to a FIFO the grader drains into a bounded tail in memory
(LogTail): nothing a worker prints reaches the disk.

Workers are forked by a multiprocessing forkserver that has imported torch (one per grader
process, shared by all submissions it grades), so a worker starts in milliseconds instead of
the seconds `import torch` takes. The forkserver never runs student code. Nothing a worker
sends is unpickled: progress is a text file (only its exact lines count: protocol.py; staff
notes come from a file the worker wrote as root), outputs are safetensors files
(grade.read_output) and every text is cleaned, capped and rid of host paths (sanitize.py).
"""

import dataclasses
import importlib
import itertools
import multiprocessing
import os
import signal
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cs336_basics.staff.grader import cgroup, protocol, sandbox
from cs336_basics.staff.grader.fixtures import has_read_expected_values
from cs336_basics.staff.grader.sanitize import clean, decode, hide_paths
from cs336_basics.staff.grader.worker import WorkerJob, main, worker_batch

POLL_S = 0.02
# Measured: the smallest container memory in which the reference scores full marks (docs/grader.md, Gradescope).
MIN_CONTAINER_MB = 768
CONTAINER_SLACK_MB = 64  # the container's memory a worker's group leaves to the grader, at least
_CONTEXT = multiprocessing.get_context("forkserver")
# torch._dynamo: the builtin guard's TorchDispatchMode imports it on its first operator (3 s)
PRELOAD = ["torch", "torch._dynamo", "numpy", "einops", "jaxtyping", "safetensors"]
_CONTEXT.set_forkserver_preload(PRELOAD)


def start_forkserver(fork_from_here: bool = False) -> None:
    """Start the forkserver now (so its `import torch` overlaps the grader's own).

    fork_from_here: instead of a fresh interpreter, the forkserver is a fork of this process,
    after this process imported the preloaded modules: torch's relocated libraries (~380 MB of
    private memory per interpreter that imports it) are then shared by the grader, the
    forkserver and every worker, which is what lets a grading fit Gradescope's 768 MB. Only for a
    process that holds nothing a student may not see (no fixture loaded yet: the CLI, at its
    start) and runs no other thread; otherwise the fresh interpreter is started."""
    from multiprocessing import forkserver, util

    if not fork_from_here or threading.active_count() > 1 or has_read_expected_values():
        forkserver.ensure_running()
        return
    for module in PRELOAD:
        importlib.import_module(module)
    spawn = util.spawnv_passfds

    def fork_instead(path, args, passfds):  # runs the forkserver's `-c` command in a fork of this process
        pid = os.fork()
        if pid:
            return pid
        try:
            keep = set(passfds) | {0, 1, 2}
            for fd in os.listdir("/proc/self/fd"):
                if int(fd) not in keep:
                    try:
                        os.close(int(fd))
                    except OSError:
                        pass
            exec(args[-1], {"__name__": "__forkserver__"})
        finally:
            os._exit(0)  # never the grader's atexit handlers or buffered output

    util.spawnv_passfds = fork_instead
    try:
        forkserver.ensure_running()
    finally:
        util.spawnv_passfds = spawn


class WorkerCannotStart(Exception):
    """A worker failed before any of the submission's code ran (protocol.STARTED): a problem of the
    grader or its machine, never the student's, so the grading is refused, not scored."""


@dataclass
class ComponentRun:
    finished: bool  # the worker reported `done <component>`
    message: str = ""  # why not
    home: Path | None = None  # where its outputs are: the worker's directory
    grader_out_of_memory: bool = (
        False  # the machine, not the worker's cgroup, ran out of memory: not the student's fault
    )


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


MAX_PROGRESS_BYTES = 1 << 16  # `ready`, `done <component>`, ...: a few hundred bytes
MAX_NOTES_BYTES = 1 << 12


class LogTail:
    """The last `keep` bytes a worker wrote to its stdout/stderr FIFO: opened (non-blocking, as
    the reader) before the worker starts, drained at every poll, removed when the worker ends."""

    def __init__(self, path: Path, keep: int = 1 << 14):
        self.path, self.keep, self.data, self.total = path, keep, bytearray(), 0
        os.mkfifo(path, 0o600)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def drain(self, chunks: int = 64) -> None:
        """Read what is waiting (at most `chunks` pipe-fulls: a worker printing nonstop cannot hold the grader)."""
        for _ in range(chunks):
            try:
                data = os.read(self.fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not data:
                return
            self.total += len(data)
            self.data += data
            del self.data[: -self.keep]

    def close(self) -> None:
        self.drain(chunks=1 << 10)
        os.close(self.fd)
        try:
            os.unlink(self.path)
        except OSError:
            pass


def log_tail(raw: bytes, code_dir: Path, lines: int = 12, chars: int = 1500) -> str:
    """The last lines of a worker's stdout and stderr (shown with a timeout or a crash), cleaned,
    with no host path."""
    text = hide_paths(bytes(raw[-8 * chars :]).decode(errors="replace"), code_dir)
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
        hint = {
            "SIGKILL": " (killed: perhaps it ran out of memory)",
            "SIGXCPU": " (CPU time limit)",
            "SIGXFSZ": " (it wrote a file larger than the limit)",
            "SIGSEGV": " (a crash in native code)",
        }
        return f"was killed by {name}{hint.get(name, '')}"
    return f"exited with code {code}"


class MemoryLedger:
    """The container memory promised to the live workers' groups of this grader process (grade-all
    grades several submissions at once): a group gets at most what the container has left, less
    CONTAINER_SLACK_MB and the other groups' promises, so that the groups run out before the
    container does. A group not inside that room (the 64 MB floor) makes no promise of that kind,
    so a container OOM under it is never awarded (Runner._container_ran_out)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._promised: dict[int, int] = {}

    def promise(self, key: int, free_bytes: int, want_mb: int) -> tuple[int, bool]:
        """(MB for the group of worker `key`, whether it is inside the container's room)."""
        with self._lock:
            others = sum(mb for k, mb in self._promised.items() if k != key)
            room = free_bytes // 2**20 - CONTAINER_SLACK_MB - others
            mb = max(64, min(want_mb, room))
            self._promised[key] = mb
            return mb, mb <= room

    def release(self, key: int) -> None:
        with self._lock:
            self._promised.pop(key, None)


LEDGER = MemoryLedger()


# stop_reason(): why a watched worker stops
FINISHED = "finished"  # every component of its plan reported done
DEAD = "dead"  # it ended before that (an exit, a crash, a kill: out of memory among them)
CPU = "cpu"  # the running phase used its CPU seconds
WALL = "wall"  # the running phase outlived the wall-clock ceiling (a hang)
BUDGET = "budget"  # the whole grading's time budget ran out


@dataclass
class Phase:
    """What is being timed in a worker: its import, then each component in turn."""

    cpu_start: float  # the worker's CPU seconds when the phase began
    wall_start: float  # time.monotonic() then
    cpu_limit: float  # Limits.startup_s for the import, Limits.cpu_per_component_s for a component
    used: float = 0.0  # CPU seconds used in the phase, as last measured


@dataclass
class Watch:
    """One worker as the runner watches it."""

    process: multiprocessing.process.BaseProcess
    home: Path  # its directory: progress, outputs
    tail: "LogTail"
    plan: list  # [(component, [(case, adapter), ...]), ...] in running order
    network: bool
    phase: Phase
    runs: dict[str, ComponentRun] = dataclasses.field(default_factory=dict)  # the components it finished
    alive: bool = True  # at the last poll
    started: bool = False  # protocol.STARTED seen: the submission's code has run
    ready: bool = False  # protocol.READY seen: imported, the components run
    seen: int = 0  # progress lines read
    polls: int = 0

    def runs_left(self) -> bool:
        return len(self.runs) < len(self.plan)

    def running(self) -> str:
        """The component the worker runs now (the first not finished)."""
        return self.plan[len(self.runs)][0]

    def stop_reason(self, limits, budget_end: float) -> str | None:
        """FINISHED, DEAD, CPU, WALL or BUDGET (checked in that order), or None: keep watching."""
        now = time.monotonic()
        if not self.runs_left():
            return FINISHED
        if not self.alive:
            return DEAD
        if self.phase.used > self.phase.cpu_limit:
            return CPU
        if now - self.phase.wall_start > limits.wall_per_component_s:
            return WALL
        if now > budget_end:
            return BUDGET
        return None


class Runner:
    """Runs components in order in as few workers as possible; see run()."""

    def __init__(
        self,
        sandbox_root: Path,
        log_dir: Path,
        code_dir: Path,
        inputs_dir: Path,
        spec: sandbox.SandboxSpec,
        reveal: bool = True,
        starts_processes: frozenset[str] = frozenset({"parallel"}),
    ):
        self.starts_processes = starts_processes  # components run alone, in workers that may start processes
        self.root, self.log_dir, self.code_dir, self.inputs_dir = sandbox_root, log_dir, code_dir, inputs_dir
        self.spec = spec
        # False for workers that saw hidden inputs: their messages hold no text the student's code
        # produced (no output tail, no exit code, no import error), only fixed sentences
        self.reveal = reveal
        self.notes: list[str] = []
        self.workers = 0  # started so far
        self.seconds: dict[str, float] = {}  # CPU seconds of the first startup and of each finished component
        self.budget_end = float("inf")  # set by run(): when the whole grading's time is up
        self.cgroup: cgroup.Cgroup | None = None  # the current worker's
        self.peak_mb = 0.0  # the highest memory peak of a worker's cgroup (staff notes)
        self.log_bytes = 0  # the most a worker printed (staff notes; only a tail is kept)
        self.oom_before = 0  # cgroup.oom_kills() when the current worker started
        self.cgroup_capped = False  # the current worker's own cgroup holds it below what the container has left
        self.resident_mb = spec.limits.resident_mb  # the current worker's memory: less where the container has less
        if spec.isolate and sandbox.is_root():
            self.notes += [f"detached the home of a grader that died: {p}" for p in sandbox.remove_stale_homes()]
            self.notes += [f"removed the cgroup of a grader that died: {p}" for p in cgroup.remove_stale()]

    def run(
        self, plan: list[tuple[str, list[tuple[str, str]]]], budget_end: float | None = None
    ) -> dict[str, ComponentRun]:
        """plan: [(component, [(case, adapter), ...]), ...]; budget_end: the time.monotonic() at
        which the whole grading's budget ends (default: Limits.total_s from now). Returns each
        component's ComponentRun."""
        runs: dict[str, ComponentRun] = {}
        remaining = list(plan)
        limits = self.spec.limits
        self.budget_end = budget_end if budget_end is not None else time.monotonic() + limits.total_s
        while remaining:
            if time.monotonic() >= self.budget_end:
                message = (
                    f"not run: the grading time budget of {limits.total_s:g} s for the whole "
                    f"submission ran out before this component (earlier ones were slow or hung)."
                )
                return runs | {c: ComponentRun(False, message) for c, _ in remaining}
            batch = worker_batch(remaining, self.starts_processes)  # process-starting components alone
            network = batch[0][0] in limits.network_components  # and apart from the others by network
            batch = list(itertools.takewhile(lambda p, net=network: (p[0] in limits.network_components) == net, batch))
            runs.update(self._one_worker(batch, network))
            remaining = [p for p in remaining if p[0] not in runs]
        if self.peak_mb:
            self.notes.append(
                f"highest memory of a worker's cgroup: {self.peak_mb:.0f} MB (limit {limits.resident_mb} MB)"
            )
        if self.log_bytes > 1 << 20:
            self.notes.append(f"a worker printed {self.log_bytes / 2**20:.0f} MB (only its last lines were kept)")
        return runs

    def _inputs(self, plan, n: int) -> Path:
        """The worker's own inputs directory: links to its cases' inputs only (under a user switch,
        the shared directory is closed to it), so it never holds another component's inputs."""
        if self.spec.uid is None:
            return self.inputs_dir
        os.chmod(self.inputs_dir, 0o700)
        mine = self.root / f"inputs-{n}"
        mine.mkdir(mode=0o755)
        for _, cases in plan:
            for case, _ in cases:
                name = protocol.input_file(case)
                if (self.inputs_dir / name).exists():
                    os.link(self.inputs_dir / name, mine / name)
        return mine

    def _start(self, plan, log: Path, home: Path, inputs: Path, network: bool):
        """A fresh worker with its own empty directory (the only place it may write)."""
        if not sandbox.make_home(home, self.spec) and self.spec.isolate:
            self.notes.append(
                "disk not limited: no tmpfs for the worker's home (needs CAP_SYS_ADMIN); "
                "each file it writes is limited by RLIMIT_FSIZE only"
            )
        limits = self.spec.limits
        self.cgroup, self.oom_before, self.resident_mb = None, cgroup.oom_kills(), limits.resident_mb
        self.cgroup_capped = False
        machine, held = cgroup.machine_memory()
        inside = False  # the worker's group fits in what the container has left: it runs out first
        if machine is not None:
            self.resident_mb, inside = LEDGER.promise(id(self), machine - held, limits.resident_mb)
            if self.resident_mb < limits.resident_mb:
                self.notes.append(
                    f"the container's memory limit ({machine / 2**20:.0f} MB) leaves a worker "
                    f"{self.resident_mb} MB, not resident_mb = {limits.resident_mb}"
                )
        if self.spec.isolate and sandbox.is_root():
            try:
                self.cgroup = cgroup.create(self.resident_mb, limits.processes, limits.cpus, limits.socket_mb)
                self.cgroup_capped = inside
            except OSError as e:
                self.notes.append(f"no cgroup: memory, processes and CPU are limited by rlimits only ({e})")
        cpu = int(limits.startup_s + sum(limits.cpu_s(c) for c, _ in plan)) + 5  # RLIMIT_CPU: each process's backstop
        spec = dataclasses.replace(self.spec, home=str(home), cgroup=self.cgroup, allow_inet=network)
        job = WorkerJob(
            spec,
            str(log),
            str(self.code_dir),
            str(inputs),
            tuple((c, tuple(cases)) for c, cases in plan),
            cpu,
            may_start_processes=any(c in self.starts_processes for c, _ in plan),
        )
        # not a daemon: a daemonic process may not start children, and the parallel component's
        # adapters start process groups; the runner kills and joins every worker itself
        process = _CONTEXT.Process(target=main, args=(job,), daemon=False)
        process.start()
        return process

    def _cpu(self, process) -> float:
        """CPU seconds the worker and its processes have used so far."""
        if self.cgroup is not None and (used := self.cgroup.cpu_seconds()) is not None:
            return used
        return sandbox.cpu_seconds(process.pid, self.spec.uid)

    def _one_worker(self, plan, network: bool = False) -> dict[str, ComponentRun]:
        """Run plan's components in one worker until all are done or one fails; returns those decided."""
        watch = self._start_watch(plan, network)
        try:
            return self._watch(watch)
        finally:
            self._stop(watch)

    def _start_watch(self, plan, network: bool) -> "Watch":
        """Phase 1: a fresh worker, its output FIFO opened before it starts, timed from its import."""
        self.workers += 1
        home, log = self.root / f"work-{self.workers}", self.log_dir / f"worker-{self.workers}.log"
        tail = LogTail(log)
        process = self._start(plan, log, home, self._inputs(plan, self.workers), network)
        return Watch(process, home, tail, plan, network, Phase(0.0, time.monotonic(), self.spec.limits.startup_s))

    def _watch(self, w: "Watch") -> dict[str, ComponentRun]:
        """Phase 2: poll the worker's progress and its CPU time until stop_reason() says why it stops."""
        while True:
            w.process.join(POLL_S)
            w.tail.drain()
            w.alive = w.process.is_alive()
            import_failed = self._read_progress(w)
            if import_failed is not None:
                return import_failed
            w.polls += 1
            if w.runs_left() and (self.cgroup is not None or w.polls % 10 == 0 or not w.alive):
                w.phase.used = max(w.phase.used, self._cpu(w.process) - w.phase.cpu_start)  # /proc: every 0.2 s
            why = w.stop_reason(self.spec.limits, self.budget_end)
            if why == FINISHED:
                return w.runs
            if why is not None:
                return w.runs | self._stopped(w, why)

    def _read_progress(self, w: "Watch") -> dict[str, ComponentRun] | None:
        """Act on the worker's new progress lines (a live worker's last line may be partial). Returns
        every component's run if its import failed; raises WorkerCannotStart if the grader is broken."""
        raw = read_worker_file(w.home / protocol.PROGRESS_FILE, self.spec.uid, limit=MAX_PROGRESS_BYTES)
        lines = (raw or b"").decode(errors="replace").split("\n")
        for line in (lines[:-1] if w.alive else lines)[w.seen :]:
            w.seen += 1
            w.started = w.started or line == protocol.STARTED
            if line == protocol.GRADER_BROKEN and not w.started:
                raise WorkerCannotStart(self._grader_broken(w.home))
            if line == protocol.IMPORT_FAILED:
                message = self._import_failed(w.home)
                return {c: ComponentRun(False, message) for c, _ in w.plan}
            finished = w.ready and w.runs_left() and line == protocol.done(w.running())
            if (line == protocol.READY and not w.ready) or finished:
                self._next_phase(w, finished)
        return None

    def _next_phase(self, w: "Watch", finished: bool) -> None:
        """The import (`ready`) or the running component (`done <component>`) ended: record its CPU
        seconds and time the next component from now."""
        now_cpu = self._cpu(w.process)
        if finished:
            component = w.running()
            w.runs[component] = ComponentRun(True, home=w.home)
            self.seconds[component] = now_cpu - w.phase.cpu_start
        else:
            self.seconds.setdefault("startup", now_cpu - w.phase.cpu_start)
            w.ready = True
            self.notes += self._sandbox_notes(w.home)
            spec = dataclasses.replace(self.spec, cgroup=self.cgroup, allow_inet=w.network)
            self.notes.append("sandbox: " + sandbox.describe(w.process.pid, spec))
        limit = self.spec.limits.cpu_s(w.running()) if w.runs_left() else self.spec.limits.cpu_per_component_s
        w.phase = Phase(now_cpu, time.monotonic(), limit)

    def _import_failed(self, home: Path) -> str:
        written = read_worker_file(home / protocol.IMPORT_ERROR_FILE, self.spec.uid, limit=4 * protocol.ERROR_CHARS)
        error = clean(hide_paths(decode(written, protocol.ERROR_CHARS), self.code_dir))
        if self.reveal:
            return "importing your cs336_basics package failed:\n" + error.strip()
        return "importing your cs336_basics package failed (the public tests show why)"

    def _stopped(self, w: "Watch", why: str) -> dict[str, ComponentRun]:
        """The runs of a worker stopped before finishing (why: a stop_reason()). Before any of the
        submission's code ran, only the whole grading's budget is the student's: else WorkerCannotStart."""
        w.tail.drain()
        exitcode = None if w.alive else w.process.exitcode
        if not w.started and why != BUDGET:  # the budget: spent by earlier workers' student code
            raise WorkerCannotStart(
                f"a grading process {_exit_text(exitcode)} before running any of your code ({why}); "
                "last lines of its output:\n" + log_tail(w.tail.data, self.code_dir)
            )
        oom = self.cgroup is not None and not w.alive and self.cgroup.usage().out_of_memory
        w.tail.drain()
        return self._failure([c for c, _ in w.plan[len(w.runs) :]], w.ready, exitcode, w.tail.data, oom, why)

    def _stop(self, w: "Watch") -> None:
        """Phase 3: kill the worker, its process group and every process of its user; remove its
        cgroup and what it left in shared places; keep its memory peak and output size for staff."""
        sandbox.kill_group(w.process.pid)
        sandbox.kill_user(self.spec.uid)
        w.process.join(5)
        LEDGER.release(id(self))  # its processes are gone: the memory is the container's again
        w.tail.close()
        self.log_bytes = max(self.log_bytes, w.tail.total)
        if self.cgroup is not None:
            usage = self.cgroup.usage()
            self.peak_mb = max(self.peak_mb, usage.peak_bytes / 2**20)
            if not self.cgroup.remove():
                self.notes.append(f"could not remove the worker's cgroup {self.cgroup.dirs[0]}")
        left = sandbox.remove_user_leftovers(self.spec.uid)
        if left:
            self.notes.append(
                f"removed what a worker left in shared places: {', '.join(left[:10])}"
                + (f" and {len(left) - 10} more" if len(left) > 10 else "")
            )

    def _grader_broken(self, home: Path) -> str:
        """Why the worker could not run (written by the grader's code before any student code ran)."""
        raw = read_worker_file(home / protocol.GRADER_BROKEN_FILE, self.spec.uid, limit=4 * protocol.ERROR_CHARS)
        return clean(decode(raw, protocol.ERROR_CHARS)) or "a grading process could not start"

    def _sandbox_notes(self, home: Path) -> list[str]:
        """The worker's notes on its sandbox, from the file it wrote as root before running student code."""
        raw = read_worker_file(
            home / protocol.SANDBOX_NOTES_FILE, None if self.spec.uid is None else 0, limit=MAX_NOTES_BYTES
        )
        if raw is None:
            return ["sandbox: the worker's notes on its sandbox are missing"]
        return [clean(line, 300) for line in raw.decode(errors="replace").splitlines() if line.strip()]

    def _failure(
        self, rest: list[str], ready: bool, exitcode: int | None, log: bytes, oom: bool = False, why: str = DEAD
    ) -> dict[str, ComponentRun]:
        """Before `ready` every remaining component fails; after it, only the one that was running.
        oom: the worker's cgroup reached its memory limit (a fixed sentence, also for hidden cases).
        why: DEAD, or the limit it reached: CPU, WALL (a hang) or BUDGET (the whole grading's)."""
        tail = log_tail(log, self.code_dir) if self.reveal else ""
        tail = f"\nlast lines of its output:\n{tail}" if tail else ""
        if oom:
            return self._out_of_memory(rest, ready, tail)
        if why == DEAD and exitcode == -signal.SIGKILL and self._container_ran_out():
            # the container's memory ran out while the worker was under its own group's lower limit: the
            # grader's problem, not the student's (without such a group the worker itself could cause it)
            message = (
                f"not graded: the autograder's container ran out of memory (not your code's limit, which is "
                f"{self.resident_mb} MB), so these points are not taken from you; course staff: give it at "
                f"least {MIN_CONTAINER_MB} MB"
            )
            return {
                c: ComponentRun(False, message, grader_out_of_memory=True) for c in (rest if not ready else rest[:1])
            }
        if not ready:
            what = self._how_the_import_ended(exitcode, why)
            return {c: ComponentRun(False, f"the grading process {what}; no component could run.{tail}") for c in rest}
        message = self._how_the_component_ended(rest[0], exitcode, why)
        return {rest[0]: ComponentRun(False, f"{message} Any remaining components ran in a fresh process.{tail}")}

    def _container_ran_out(self) -> bool:
        """The worker's own group held it below what the container had left, and an OOM kill happened since it started."""
        return self.cgroup_capped and cgroup.oom_kills() > self.oom_before

    def _out_of_memory(self, rest: list[str], ready: bool, tail: str) -> dict[str, ComponentRun]:
        """The worker's cgroup ran out of memory: in its import every component fails, else the running one."""
        what = f"while running {rest[0]}" if ready else "while importing your package"
        message = (
            f"the grading process ran out of memory {what}: it and the processes it started may hold "
            f"at most {self.resident_mb} MB, memory-backed files (memfd, /tmp, /dev/shm, its "
            f"directory) included; it was killed."
        )
        if not ready:
            return {c: ComponentRun(False, message + " No component could run.") for c in rest}
        return {rest[0]: ComponentRun(False, f"{message} Any remaining components ran in a fresh process.{tail}")}

    def _limit_text(self, why: str, limit: float) -> str:
        """What the worker did to be stopped for `why` (CPU, WALL or BUDGET)."""
        limits = self.spec.limits
        return {
            CPU: f"used its CPU time limit of {limit:g} s (an infinite loop?)",
            WALL: f"did not finish within {limits.wall_per_component_s:g} s of wall-clock time while using "
            "little CPU (waiting forever: a deadlock, a sleep?)",
            BUDGET: f"was still running when the grading time budget of {limits.total_s:g} s for the whole "
            "submission ran out",
        }[why]

    def _how_the_import_ended(self, exitcode: int | None, why: str) -> str:
        if exitcode is None:
            return f"{self._limit_text(why, self.spec.limits.startup_s)} while importing your package"
        if self.reveal:
            return f"{_exit_text(exitcode)} while importing your package"
        return "ended while importing your package"

    def _how_the_component_ended(self, component: str, exitcode: int | None, why: str) -> str:
        if exitcode is None:
            return (
                f"{component} {self._limit_text(why, self.spec.limits.cpu_s(component))}; it was stopped and scores 0."
            )
        if not self.reveal:
            return f"the grading process ended while running {component}, before finishing it."
        return (
            f"the grading process {_exit_text(exitcode)} while running {component}, before finishing "
            f"it (did your code call exit() or os._exit()?)."
        )
