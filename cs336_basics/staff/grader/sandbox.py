"""Isolation of a worker process, which runs student code.

The grader makes, per worker, a cgroup (cgroup.py: memory with memfd, tmpfs and TCP buffer pages
included and no swap, pids.max, a CPU quota, its CPU time) and a tmpfs for its home (mount_home:
disk_mb MB, disk_inodes files; its mount's source names the grader, so remove_stale_homes()
detaches it at the next start should the grader die first). `enter(spec, log_path, cpu_seconds)`
runs first in the worker, before any student code, and:
  1. asks to be killed when its parent (the forkserver, which ends with the grader) dies; joins
     the worker's cgroup (every process it starts is in it too); starts a new session (the grader
     kills the process group) and sends stdout/stderr to the grader's pipe (a FIFO: the grader
     keeps only a bounded tail in memory, nothing on disk);
  2. sets resource limits: address space (RLIMIT_AS), file size, open files, CPU time, no core
     files, and processes/threads of the worker's user;
  3. unshares the IPC namespace (System V objects and POSIX message queues of its own, gone with
     it) and the network namespace and brings its loopback device up (loopback_up: 127.0.0.1 and
     ::1 work, for a gloo process group say; no other device or route exists), and the mount
     namespace, in which it builds a new root holding only the system directories (/usr, /etc,
     /dev, /proc, ...), Python, its installed packages and the sandbox directory (the student's
     package, the pristine adapters, the inputs), every one bound read-only, plus the worker's
     home (its tmpfs, the only writable place but /tmp and /dev/shm, fresh 16 MB / 1024-inode
     tmpfs) and chroots into it: the staff repository, the fixtures, homes and other students'
     sandboxes do not exist there; the virtualenv's world-writable .lock is masked;
  4. continues as PID 1 of a new PID namespace (when it ends the kernel kills every process in it;
     the outer process waits and ends the same way);
  5. forbids gaining privileges (PR_SET_NO_NEW_PRIVS) and installs the seccomp filter
     (seccomp.py: sockets AF_UNIX only, AF_INET/AF_INET6 too in a worker of
     Limits.network_components; no System V IPC or POSIX message queue; no io_uring; no foreign ABI);
  6. switches to a user id of its own (one no other process uses, so `kill_user` can end every
     process the submission started, and RLIMIT_NPROC counts only its processes; it cannot leave
     the chroot);
  7. empties the environment (it may hold tokens), points TMPDIR and Python's cached
     tempfile.tempdir at its private /tmp (else its home), and closes every inherited descriptor.

Steps 3-4 and the cgroup need CAP_SYS_ADMIN, step 6 CAP_SETUID/CAP_SETGID; what a machine
allows decides the isolation level (preflight.py: "full", "container" = root without
CAP_SYS_ADMIN as in a default `docker run`, "none" = not root), and each worker notes what
failed. Where there are no namespaces, what replaces them: the AF_INET refusal (network), file
permissions (the bundle's staff files are not readable by the worker's user), kill by user id
and RLIMIT_NPROC (PID namespace and pids.max), RLIMIT_CPU and the CPU time of the user's
processes (cgroup), and `remove_user_leftovers` (files of the worker's user in the shared /tmp
and /dev/shm, System V objects). After the worker: kill_group, kill_user, the cgroup's own
kill-and-remove; its memory peak and OOM kills give the "ran out of memory" message. The
grader's protections that do not depend on the sandbox always hold: expected values never enter
the worker, outputs are read as safetensors data (grade.read_output), and results.json is
written by the grader after every worker has ended.
"""

import ctypes
import os
import random
import resource
import signal
import site
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cs336_basics.staff.grader import cgroup, protocol, seccomp
from cs336_basics.staff.grader.cgroup import Cgroup
from cs336_basics.staff.grader.config import Limits

CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x40000000, 0x20000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    8,
    32,
    4096,
    16384,
    1 << 18,
)
PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG = 38, 1
SYS_MOUNT_SETATTR, AT_RECURSIVE, MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = (
    442,
    0x8000,
    1,
    2,
)  # same number on x86_64 and arm64
MNT_DETACH = 2
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc", "/sys")


# What enter() sets up, by the names preflight.py's isolation levels and its report use.
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


@dataclass(frozen=True)
class SandboxSpec:
    uid: int | None  # the user the worker switches to; None: stay the grader's user
    new_root: str  # an empty directory: the worker's root is built on a tmpfs mounted here
    visible: tuple[str, ...]  # besides SYSTEM_DIRS: Python, its packages, the sandbox directory
    home: str  # the worker's writable directory: cwd and $HOME
    limits: Limits
    isolate: bool  # False: rlimits and logs only (tests use it to show a cheat works without it)
    cgroup: Cgroup | None = None  # the worker's control group (runner.py makes one per worker), joined first
    allow_inet: bool = False  # AF_INET/AF_INET6 sockets (a gloo group on loopback): Limits.network_components


def is_root() -> bool:
    return os.geteuid() == 0


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def plan(sandbox_root: Path, home: Path, new_root: Path, limits: Limits, isolate: bool = True) -> SandboxSpec:
    """A worker sees the system directories, the interpreter, the virtualenv and sandbox_root.
    Raises RuntimeError if the virtualenv holds a copy of cs336_basics (a non-editable install of
    this repository would show workers the reference solution)."""
    copies = [p for p in site.getsitepackages() if (Path(p) / "cs336_basics").exists()]
    if copies:
        raise RuntimeError(
            f"cs336_basics is installed in {copies[0]}; grading workers would see the reference. "
            "Install the project editable (`uv sync`) or not at all (`uv sync --no-install-project`)."
        )
    paths = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sandbox_root)}, key=len)
    visible = tuple(p for i, p in enumerate(paths) if not any(_inside(p, q) for q in (*SYSTEM_DIRS, *paths[:i])))
    uid = pick_uid() if isolate and is_root() else None
    return SandboxSpec(uid, str(new_root), visible, str(home), limits, isolate)


def pick_uid() -> int:
    """A user id no running process has, from a range no distribution assigns."""
    used = {_uid_of(pid) for pid in _pids()}
    while True:
        uid = random.randrange(1_000_000, 2_000_000_000)
        if uid not in used:
            return uid


# ---------------------------------------------------------------- in the worker, before student code


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _read_only(libc, target: str) -> None:
    """Make the bind mount at target and every mount under it read-only (and nosuid)."""
    attr = struct.pack("QQQQ", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    if libc.syscall(SYS_MOUNT_SETATTR, -100, target.encode(), AT_RECURSIVE, attr, len(attr)) == 0:
        return
    # kernels before 5.12: one mount at a time (the submounts of the bind are remounted too)
    mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
    for point in [m for m in mounts if _inside(m, target)]:
        _check(
            libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, None),
            f"read-only {point}",
        )


def _chroot(libc, new_root: str, visible: tuple[str, ...], home: str) -> None:
    """Build the worker's root on a tmpfs at new_root (system directories and `visible` bound in
    read-only at their own paths, its home bound writable, fresh small /tmp and /dev/shm) and
    chroot into it."""
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")  # nothing leaks out
    _check(libc.mount(b"tmpfs", new_root.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755,size=64m"), "new root")

    def scratch(path: str) -> None:  # an empty, private /tmp or /dev/shm, never the host's
        os.makedirs(new_root + path, exist_ok=True)
        _check(
            libc.mount(
                b"tmpfs",
                (new_root + path).encode(),
                b"tmpfs",
                MS_NOSUID | MS_NODEV,
                b"mode=1777,size=16m,nr_inodes=1024",
            ),
            path,
        )

    scratch("/tmp")  # first: the sandbox directory may be bound under it
    for path in (*SYSTEM_DIRS, *visible):
        if not os.path.lexists(path):
            continue
        target = new_root + path
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            os.symlink(os.readlink(path), target)
            continue
        os.makedirs(target, exist_ok=True)
        _check(libc.mount(path.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
        _read_only(libc, target)
        if path == "/dev":
            scratch("/dev/shm")
    empty = new_root + "/dev/shm/.empty"  # on the worker's own scratch tmpfs
    with open(empty, "w"):
        os.chmod(empty, 0o444)
    for path in visible:  # a virtualenv's world-writable .lock (uv locks it): the worker gets an empty stand-in
        if os.path.isfile(path + "/.lock") and not os.path.islink(path + "/.lock"):
            _check(
                libc.mount(empty.encode(), (new_root + path + "/.lock").encode(), None, MS_BIND, None),
                f"mask {path}/.lock",
            )
            _read_only(libc, new_root + path + "/.lock")
    if os.path.ismount(home):  # the grader's size- and inode-limited tmpfs: the only writable place but /tmp
        _check(libc.mount(home.encode(), (new_root + home).encode(), None, MS_BIND, None), "bind the home")
    os.chroot(new_root)


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # linux/sockios.h, linux/if.h


def loopback_up() -> None:
    """Bring "lo" of this network namespace up (a fresh one has it down): 127.0.0.1 and ::1 then
    work, for a gloo process group say, and nothing else does (there is no other device)."""
    import fcntl
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH14x", b"lo", 0)  # struct ifreq: name, then ifr_flags
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _new_pid_namespace(libc) -> None:
    """Continue as PID 1 of a new PID namespace: when it ends, the kernel kills every process in
    it (double forks, setsid, a zombie main thread with live threads). The caller's process stays
    outside, as root, waits for it and ends the same way."""
    _check(libc.unshare(CLONE_NEWPID), "unshare the PID namespace")
    pid = os.fork()
    if pid:  # never returns: this process must not go on to run the student's code too
        code = 1
        # no inherited descriptor: the forkserver's "alive" pipe among them would keep the
        # forkserver, and so this process (PR_SET_PDEATHSIG), alive after the grader's death
        os.closerange(3, 1 << 16)
        try:
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            if code < 0:  # end by the same signal (SIGKILL, say, from the OOM killer)
                if -code not in (signal.SIGKILL, signal.SIGSTOP):  # these have no handler to reset
                    signal.signal(-code, signal.SIG_DFL)
                os.kill(os.getpid(), -code)
                code = 128 - code
        finally:
            os._exit(code & 0xFF)
    _die_with_parent()  # the outer process: killed with the forkserver, it takes this one along
    _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")


def _die_with_parent() -> None:
    """SIGKILL this process when its parent ends (the forkserver ends with the grader; the outer
    process of a PID namespace with the forkserver); if the parent is already gone, end now."""
    parent = os.getppid()
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (value, value))


def _write_notes(home: str, notes: list[str]) -> None:
    """The notes for staff, in a file the worker's user cannot write (progress lines can be forged)."""
    fd = os.open(
        os.path.join(home, protocol.SANDBOX_NOTES_FILE), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644
    )
    with os.fdopen(fd, "w") as f:
        f.write("".join(f"{n}\n" for n in notes))


class SandboxError(RuntimeError):
    """A protection the worker must not run without failed (the user switch). missing: as enter's."""

    def __init__(self, missing: dict[str, str]):
        super().__init__("; ".join(missing.values()))
        self.missing = missing


def enter(spec: SandboxSpec, log_path: str, cpu_seconds: int) -> dict[str, str]:
    """Isolate this process as described in the module docstring. Returns {mechanism: note} for
    each of MECHANISMS that could not be set up (the notes, also written to the worker's
    protocol.SANDBOX_NOTES_FILE, are what the grader reports; preflight.py names the isolation
    level from the mechanisms). A failed user switch raises SandboxError instead."""
    missing = {}
    _die_with_parent()
    _first_to_die_out_of_memory()
    if spec.cgroup is not None:
        try:
            spec.cgroup.join()  # before anything else: every process it starts is in it too
        except OSError as e:
            missing["cgroup memory/pids/cpu"] = (
                f"no cgroup: memory, processes and CPU are limited by rlimits only ({e})"
            )
    os.setsid()
    _redirect_output(log_path)
    _set_limits(spec.limits, cpu_seconds)
    private_tmp = False  # a /tmp and /dev/shm of its own (in its private root)
    if spec.isolate and is_root():
        private_tmp = _enter_namespaces(spec, missing)
    if spec.isolate:
        _install_seccomp(spec, missing)
    _write_notes(spec.home, list(missing.values()))  # as root: the worker's user cannot change it
    _clean_environment(spec.home, private_tmp)
    if spec.uid is not None:
        _switch_user(spec, missing)
    os.closerange(3, 1 << 16)
    os.chdir(spec.home)
    return missing


def _first_to_die_out_of_memory() -> None:
    """The first the kernel kills when the machine or the container runs out of memory, never the grader."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def _redirect_output(log_path: str) -> None:
    """stdin from /dev/null; stdout and stderr appended to log_path (the grader's FIFO)."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((null, 0), (log, 1), (log, 2)):
        os.dup2(fd, target)
    os.close(log), os.close(null)


def _set_limits(limits: Limits, cpu_seconds: int) -> None:
    """Address space, file size, no core file, descriptors, and RLIMIT_CPU (each process's backstop)."""
    mb = 2**20
    _limit(resource.RLIMIT_AS, limits.memory_mb * mb)
    _limit(resource.RLIMIT_FSIZE, limits.file_mb * mb)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NOFILE, limits.open_files)
    _limit(resource.RLIMIT_CPU, cpu_seconds)


def _enter_namespaces(spec: SandboxSpec, missing: dict[str, str]) -> bool:
    """IPC, network (with its loopback), mount (the private root) and PID namespaces, each noted in
    `missing` if refused. Returns whether the private root (its own /tmp and /dev/shm) is up."""
    libc, private_tmp = _libc(), False
    try:
        _check(libc.unshare(CLONE_NEWIPC), "unshare the IPC namespace")
    except OSError as e:
        missing["IPC namespace"] = f"no IPC namespace: System V IPC and POSIX queues are refused by seccomp only ({e})"
    try:
        _check(libc.unshare(CLONE_NEWNET), "unshare the network namespace")
    except OSError as e:
        what = "may open TCP sockets to any address" if spec.allow_inet else "has no TCP socket (seccomp)"
        missing["network namespace"] = f"no network namespace: this worker {what} ({e})"
    else:
        try:
            loopback_up()
        except OSError as e:
            missing["loopback"] = f"no loopback device: this worker has no network at all ({e})"
    try:
        _check(libc.unshare(CLONE_NEWNS), "unshare the mount namespace")
        _chroot(libc, spec.new_root, spec.visible, spec.home)
        private_tmp = True
    except OSError as e:
        missing["mount namespace"] = f"no private root: staff files are hidden by their permissions only ({e})"
    if not os.path.ismount(spec.home):
        missing["tmpfs"] = "disk not limited: the worker's home is not a tmpfs of its own"
    try:
        _new_pid_namespace(libc)
    except OSError as e:
        missing["PID namespace"] = f"no PID namespace: processes left behind are killed by user id only ({e})"
    return private_tmp


def _install_seccomp(spec: SandboxSpec, missing: dict[str, str]) -> None:
    try:
        _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        seccomp.install(allow_inet=spec.allow_inet)  # the user switch below still works under it
    except (OSError, KeyError) as e:
        missing["seccomp"] = f"no seccomp filter: every socket family and System V IPC are allowed ({e!r})"


def _clean_environment(home: str, private_tmp: bool) -> None:
    """A fixed environment; temporary files in the private /tmp, else in the worker's home."""
    os.environ.clear()
    tmp = "/tmp" if private_tmp else home  # never a directory the grader's TMPDIR named
    os.environ.update(
        PATH="/usr/local/bin:/usr/bin:/bin",
        HOME=home,
        TMPDIR=tmp,
        LANG="C.UTF-8",
        OMP_NUM_THREADS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    tempfile.tempdir = None  # the forkserver cached the grader's TMPDIR: look again
    tempfile.tempdir = tempfile.gettempdir()


def _switch_user(spec: SandboxSpec, missing: dict[str, str]) -> None:
    """Become spec.uid for good (no groups, no new privileges), or raise SandboxError."""
    try:
        _limit(resource.RLIMIT_NPROC, spec.limits.processes)
        _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        os.setgroups([])
        os.setgid(spec.uid)
        os.setuid(spec.uid)
        if os.getuid() != spec.uid or os.geteuid() != spec.uid:
            raise OSError(f"still user {os.geteuid()}")
    except OSError as e:
        raise SandboxError(missing | {"user switch": f"could not switch to user {spec.uid} ({e})"}) from e
    _die_with_parent()  # again: the switch clears it


# ---------------------------------------------------------------- in the grader


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _uid_of(pid: int) -> int | None:
    """The real user id of a live (not zombie) process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    if fields.get("State", "").strip().startswith("Z"):
        return None
    return int(fields["Uid"].split()[0])


HOME_SOURCE = "cs336-home"  # the source name of a home tmpfs: cs336-home-<grader pid>-<its start time>


def _start_time(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def mount_home(home: Path, uid: int | None, limits: Limits) -> bool:
    """Mount a tmpfs of limits.disk_mb MB and limits.disk_inodes files on the worker's home (root
    only): its writable space, so one submission cannot fill the shared temporary filesystem.
    Its pages count against the worker's memory (its cgroup). The mount's source names this
    grader process, so remove_stale_homes() can detach it should the grader die before
    unmount_under(). Returns whether it is mounted."""
    if uid is None or not is_root():
        return False
    source = f"{HOME_SOURCE}-{os.getpid()}-{_start_time(os.getpid())}"
    options = f"size={limits.disk_mb}m,nr_inodes={limits.disk_inodes},mode=0700,uid={uid},gid={uid}"
    return _libc().mount(source.encode(), str(home).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()) == 0


def make_home(home: Path, spec: SandboxSpec) -> bool:
    """A worker's home: a new directory (0700) of the worker's user, under isolation with a tmpfs
    on it (mount_home). Returns whether the tmpfs is mounted."""
    home.mkdir(mode=0o700)
    if spec.uid is not None:
        os.chown(home, spec.uid, spec.uid)
    return spec.isolate and mount_home(home, spec.uid, spec.limits)


def remove_stale_homes() -> list[str]:
    """Detach the home tmpfs mounts of graders that are gone (killed before their cleanup), and
    delete the cs336-grade-* directory under the temporary directory that held them. Returns
    the mount points detached."""
    import shutil
    import tempfile

    with open("/proc/self/mountinfo") as f:
        mounts = [line.split() for line in f]
    stale = []
    for fields in mounts:
        rest = fields[fields.index("-") + 1 :]
        if rest[0] != "tmpfs" or not rest[1].startswith(HOME_SOURCE + "-"):
            continue
        pid, _, started = rest[1].removeprefix(HOME_SOURCE + "-").partition("-")
        if pid.isdigit() and _start_time(int(pid)) != started:  # that grader is gone (or its pid reused)
            stale.append(fields[4].replace("\\040", " "))
    for point in sorted(stale, key=len, reverse=True):
        _libc().umount2(point.encode(), MNT_DETACH)
    tmp = os.path.realpath(tempfile.gettempdir())
    for point in stale:
        parts = Path(point).relative_to("/").parts
        top = Path(tmp, parts[len(Path(tmp).parts) - 1]) if _inside(point, tmp) and point != tmp else None
        if top is not None and top.name.startswith("cs336-grade-"):
            shutil.rmtree(top, ignore_errors=True)
    return stale


def unmount_under(path: Path) -> None:
    """Detach every mount at or under path (the homes mount_home made)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in sorted((p for p in points if _inside(p, str(path))), key=len, reverse=True):
        _libc().umount2(point.encode(), MNT_DETACH)


def children(pid: int) -> list[int]:
    """The child processes of pid (the worker's: its PID namespace's init)."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by pid (the worker called setsid), pid itself and its
    children (the init of its PID namespace: the kernel then kills everything in it)."""
    cgroup.sigkill(children(pid))
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_user(uid: int | None, rounds: int = 50) -> None:
    """SIGKILL every process of user uid (the worker's own user id) until none is left."""
    if uid is None or uid == 0 or uid == os.getuid():
        return
    cgroup.kill_until_gone(lambda: [pid for pid in _pids() if _uid_of(pid) == uid], rounds)


def _cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of a process (its waited-for children included), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15])
    except (OSError, IndexError, ValueError):
        return 0


def descendants(pid: int) -> list[int]:
    """pid and every process below it (children of every thread, recursively)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children(p)
    return found


def cpu_seconds(pid: int, uid: int | None) -> float:
    """CPU time used by a worker where it has no cgroup: pid's process tree, and every process of
    uid (the worker's own user: processes that left the tree). Processes that ended unwaited
    are not counted; RLIMIT_CPU bounds each process."""
    pids = set(descendants(pid))
    if uid is not None:
        pids |= {p for p in _pids() if _uid_of(p) == uid}
    return sum(_cpu_ticks(p) for p in pids) / os.sysconf("SC_CLK_TCK")


SYSV_IPC = {"shm": 0, "sem": 1, "msg": 2}  # /proc/sysvipc/<kind>


def _sysv_objects(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of every System V IPC object the user owns or created, from /proc/sysvipc."""
    found = []
    for kind in SYSV_IPC:
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                header, *rows = [line.split() for line in f]
        except OSError:
            continue
        cols = {name: i for i, name in enumerate(header)}
        for row in rows:
            if uid in (int(row[cols["uid"]]), int(row[cols["cuid"]])):
                found.append(
                    (kind, int(row[cols["shmid" if kind == "shm" else "semid" if kind == "sem" else "msqid"]]))
                )
    return found


def remove_user_leftovers(uid: int | None) -> list[str]:
    """After a worker whose user had no namespaces of its own: delete the files and directories
    that user left in the shared /tmp and /dev/shm (POSIX shared memory and semaphores) and
    /dev/mqueue, and its System V IPC objects. Returns what was removed (none where the worker had
    its own root and IPC namespace: there is nothing of it here)."""
    if uid is None or uid == 0 or uid == os.getuid():
        return []
    import shutil

    removed = []
    for top in ("/tmp", "/dev/shm", "/dev/mqueue"):
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                removed.append(entry.path)
            except OSError:
                pass
    libc = _libc()
    IPC_RMID = 0
    for kind, ident in _sysv_objects(uid):
        ctl = {"shm": libc.shmctl, "sem": libc.semctl, "msg": libc.msgctl}[kind]
        if (ctl(ident, 0, IPC_RMID, None) if kind == "sem" else ctl(ident, IPC_RMID, None)) == 0:
            removed.append(f"System V {kind} {ident}")
    return removed


def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return {k: v.strip() for k, _, v in (line.partition(":") for line in f)}
    except OSError:
        return {}


def describe(pid: int, spec: SandboxSpec) -> str:
    """How the live worker pid is isolated, read from /proc by the grader (not reported by it)."""
    if not spec.isolate:
        return "sandbox off (test mode)"
    inner = children(pid)[:1] or [pid]  # with a PID namespace, its init runs the student's code
    status = _status(inner[0])
    uid = status.get("Uid", "?").split()[0]
    parts = [f"user {uid}" + ("" if spec.uid is not None else " (the grader's: no user switch)")]
    parts.append("seccomp filter" if status.get("Seccomp") == "2" else "NO seccomp filter")
    parts.append("AF_INET allowed" if spec.allow_inet else "no AF_INET")
    for ns, what in (
        ("pid_for_children", "own PID namespace"),
        ("net", "no network"),
        ("ipc", "own IPC namespace"),
        ("mnt", "own root: only Python, the system and the sandbox"),
    ):
        try:
            separate = os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns.split('_')[0]}")
        except OSError:
            separate = False
        parts.append(what if separate else f"NOT {what}")
    if spec.cgroup is not None:
        inside = set(spec.cgroup.pids())
        parts.append(f"cgroup v{spec.cgroup.version}" if pid in inside else "NOT in its cgroup")
    else:
        parts.append("no cgroup")
    return ", ".join(parts)
