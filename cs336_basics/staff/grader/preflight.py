"""Before grading: which of the sandbox's mechanisms this machine lacks, and so the isolation
level it allows. `missing()` forks a child that tries each one, in a cgroup and namespaces of its
own (nothing it does reaches the grader or the host: its mount namespace is private before it
mounts anything), and reports; `level()` names the strongest level whose mechanisms all work:

  full       every mechanism (root with CAP_SYS_ADMIN: a VM, a privileged container);
  container  a user id of its own per worker and no_new_privs + seccomp (root with Docker's
             default capabilities: CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_CHOWN, no CAP_SYS_ADMIN);
  none       neither (not root): the worker runs as the grader's user.

`cs336 grade` and `grade-all` refuse to grade (exit 2) below --require-isolation (default
"container"); `statement()` is the staff-only account of what held (console and results.json's
extra_data, never a student-visible field). The README's grader section lists each level's
residual risks.
"""

import json
import os
import shutil
import tempfile

MECHANISMS = (
    "user switch",
    "network namespace",
    "loopback",
    "mount namespace",
    "tmpfs",
    "PID namespace",
    "IPC namespace",
    "cgroup memory/pids/cpu",
    "seccomp",
)
LEVELS = ("none", "container", "full")  # weakest first
REQUIRES = {"none": (), "container": ("user switch", "seccomp"), "full": MECHANISMS}
# What each mechanism keeps, and what replaces it where it is missing (README: residual risks).
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


def _try_all(scratch: str, group) -> dict[str, str]:
    """In the forked child: {mechanism: why it failed} (empty: everything works)."""
    from cs336_basics.staff.grader import sandbox, seccomp

    failed = {}
    libc = sandbox._libc()

    def attempt(name, action):
        try:
            action()
        except Exception as e:  # noqa: BLE001 - any failure means the mechanism is missing
            failed[name] = f"{type(e).__name__}: {e}"

    if group is None:
        failed["cgroup memory/pids/cpu"] = "no cgroup could be created"
    else:
        attempt("cgroup memory/pids/cpu", group.join)
    attempt("network namespace", lambda: sandbox._check(libc.unshare(sandbox.CLONE_NEWNET), "unshare(CLONE_NEWNET)"))
    if "network namespace" not in failed:
        attempt("loopback", sandbox.loopback_up)
    attempt(
        "mount namespace",
        lambda: (
            sandbox._check(libc.unshare(sandbox.CLONE_NEWNS), "unshare(CLONE_NEWNS)"),
            sandbox._check(libc.mount(None, b"/", None, sandbox.MS_REC | sandbox.MS_PRIVATE, None), "make / private"),
        ),
    )
    if "mount namespace" not in failed:  # only in a private namespace: nothing to clean up on the host
        attempt(
            "tmpfs",
            lambda: sandbox._check(
                libc.mount(b"tmpfs", scratch.encode(), b"tmpfs", sandbox.MS_NOSUID, b"size=1m,nr_inodes=16"),
                "mount tmpfs",
            ),
        )
    else:
        failed["tmpfs"] = "needs a private mount namespace"
    attempt("PID namespace", lambda: sandbox._check(libc.unshare(sandbox.CLONE_NEWPID), "unshare(CLONE_NEWPID)"))
    attempt("IPC namespace", lambda: sandbox._check(libc.unshare(sandbox.CLONE_NEWIPC), "unshare(CLONE_NEWIPC)"))
    attempt(
        "seccomp",
        lambda: (
            sandbox._check(libc.prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs"),
            seccomp.install(),
        ),
    )

    def switch():
        uid = sandbox.pick_uid()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)

    attempt("user switch", switch)
    return failed


def missing() -> dict[str, str]:
    """{mechanism: why it is unavailable} for each of MECHANISMS this machine lacks."""
    from cs336_basics.staff.grader import cgroup, sandbox

    if not sandbox.is_root():
        return {m: "needs root" for m in MECHANISMS}
    try:
        group = cgroup.create(64, 8, 0.1)
    except OSError as e:
        group, cgroup_error = None, str(e)
    scratch = tempfile.mkdtemp(prefix="cs336-preflight-")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and exit, whatever happens
        try:
            os.close(read)
            os.write(write, json.dumps(_try_all(scratch, group)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        raw = f.read()
    os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        failed = json.loads(raw or b"{}")
    except ValueError:
        failed = {"all": "the probe died"}
    if group is None:
        failed["cgroup memory/pids/cpu"] = cgroup_error
    else:
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
