"""Before grading: which of the sandbox's mechanisms this machine lacks, and so the isolation
level it allows. `missing()` forks a child that enters the sandbox exactly as a worker does
(sandbox.plan, make_home, a cgroup of its own, sandbox.enter: one code path) in a scratch
directory, and reports what enter() could not set up (nothing it does reaches the grader or the
host: its mounts are in a private namespace, its home's tmpfs is detached after it); `level()`
names the strongest level whose mechanisms all work:

  full       every mechanism (root with CAP_SYS_ADMIN: a VM, a privileged container);
  container  a user id of its own per worker and no_new_privs + seccomp (root with Docker's
             default capabilities: CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_CHOWN, no CAP_SYS_ADMIN);
  none       neither (not root): the worker runs as the grader's user.

`cs336 grade` and `grade-all` refuse to grade (exit 2) below --require-isolation (default
"container"); `statement()` is the staff-only account of what held (console and results.json's
extra_data, never a student-visible field). The README's grader section lists each level's
residual risks.
"""

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

from cs336_basics.staff.grader import environment  # imported as root: the worker's user may not read it
from cs336_basics.staff.grader.sandbox import MECHANISMS

LEVELS = ("none", "container", "full")  # weakest first
REQUIRES = {"none": (), "container": ("user switch", "seccomp"), "full": MECHANISMS}
# What each mechanism keeps, and what replaces it where it is missing (docs/grader.md: residual risks).
KEEPS = {
    "user switch": "a user id of its own per worker (staff files closed to it by their permissions; kill by user id; RLIMIT_NPROC)",
    "seccomp": "no_new_privs + seccomp (no AF_INET outside the network components, no System V IPC or POSIX queues, no io_uring)",
    "network namespace": "a network namespace (loopback only)",
    "loopback": "a loopback device in it",
    "mount namespace": "a private root (only Python, the system and the sandbox; private /tmp and /dev/shm)",
    "tmpfs": "a size- and inode-limited tmpfs home",
    "PID namespace": "a PID namespace (every process dies with the worker)",
    "IPC namespace": "an IPC namespace",
    "cgroup memory/pids/cpu": "a cgroup (memory incl. memfd/tmpfs/TCP buffers, pids, CPU quota and CPU time)",
}
ALWAYS = (
    "rlimits (address space, CPU time, file size, open files)",
    "fresh public inputs",
    "separate public and hidden workers",
    "the built-in recorder",
    "outputs read as data",
)


# The key of missing()'s answer that is no mechanism: the worker's user cannot import what a
# grading imports (environment.problem), so no level can grade: the command refuses outright.
ENVIRONMENT = "worker environment"
PROBE_CPU_S = 10  # the probe's RLIMIT_CPU: it runs no student code, so any bound will do


def _probe(spec, log: Path) -> None:
    """In the forked child: enter the sandbox as a worker does and write {mechanism: why it
    failed} as the last line of its log (enter sends stdout there); then exit."""
    from cs336_basics.staff.grader import sandbox

    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # nothing to the grader's stdout
        os.dup2(fd, 1)
        try:
            failed = sandbox.enter(spec, str(log), PROBE_CPU_S)
        except sandbox.SandboxError as e:
            failed = e.missing
        except Exception as e:  # noqa: BLE001 - a worker would die here too: no mechanism can be counted on
            failed = {m: f"entering the sandbox failed: {e!r}" for m in MECHANISMS}
        else:
            if (problem := environment.problem()) is not None:  # as the worker's user, in its sandbox
                failed[ENVIRONMENT] = problem
        os.write(1, b"\n" + json.dumps(failed).encode() + b"\n")
    finally:
        os._exit(0)


def missing() -> dict[str, str]:
    """{mechanism: why it is unavailable} for each of MECHANISMS this machine lacks."""
    from cs336_basics.staff.grader import cgroup, sandbox
    from cs336_basics.staff.grader.config import load_config

    if not sandbox.is_root():
        return {m: "needs root" for m in MECHANISMS}
    failed = {}
    try:
        group = cgroup.create(64, 8, 0.1)
    except OSError as e:
        group, failed["cgroup memory/pids/cpu"] = None, str(e)
    scratch = Path(tempfile.mkdtemp(prefix="cs336-preflight-"))
    try:
        os.chmod(scratch, 0o711)  # as grade.py's: the worker's user passes through, lists nothing
        (scratch / "sandbox").mkdir(mode=0o755)
        (scratch / "new-root").mkdir(mode=0o755)
        # the address space a worker gets is no mechanism: the probe is a fork of a grader that may hold more
        limits = dataclasses.replace(load_config().limits, memory_mb=1 << 20)
        spec = sandbox.plan(scratch / "sandbox", scratch / "sandbox", scratch / "new-root", limits)
        spec = dataclasses.replace(spec, home=str(scratch / "sandbox" / "home"), cgroup=group)
        sandbox.make_home(Path(spec.home), spec)
        log = scratch / "log"
        pid = os.fork()
        if pid == 0:
            _probe(spec, log)
        os.waitpid(pid, 0)
        try:
            failed |= json.loads(log.read_bytes().splitlines()[-1])
        except (OSError, IndexError, ValueError):
            failed = {m: "the probe died before it reported" for m in MECHANISMS}
    finally:
        sandbox.unmount_under(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
        if group is not None:
            group.remove()
    return failed


def level(failed: dict[str, str]) -> str:
    """The strongest of LEVELS whose mechanisms are all absent from `failed`."""
    return next(name for name in reversed(LEVELS) if not set(REQUIRES[name]) & set(failed))


_probed: tuple[str, tuple[tuple[str, str], ...]] | None = None


def record(failed: dict[str, str]) -> None:
    """Remember what missing() found (the command line probes before it starts any thread)."""
    global _probed
    _probed = level(failed), tuple(sorted(failed.items()))


def probe() -> tuple[str, tuple[tuple[str, str], ...]]:
    """(level, ((mechanism, why it failed), ...)) for this machine, probed once per process."""
    if _probed is None:
        record(missing())
    return _probed


def statement(isolate: bool = True) -> dict:
    """For staff only: the isolation level, the protections that held and those that did not."""
    if not isolate:
        return {"level": "off", "held": list(ALWAYS), "missing": {"sandbox": "turned off (a test's config)"}}
    name, failed = probe()
    failed = dict(failed)
    held = [KEEPS[m] for m in MECHANISMS if m not in failed] + list(ALWAYS)
    return {"level": name, "held": held, "missing": {m: failed[m] for m in MECHANISMS if m in failed}}
