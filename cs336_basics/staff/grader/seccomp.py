"""A seccomp filter for the worker, assembled here as a classic BPF program (seccomp(2),
linux/filter.h) and installed with prctl(PR_SET_SECCOMP); needs PR_SET_NO_NEW_PRIVS first.

The program is a sequence of independent rule blocks (each loads what it tests, returns a verdict
for the system calls it is about and falls through to the next block otherwise), then ALLOW:
  - `_abi_rules`: no system call of another ABI (x32, i386: the filter knows only native numbers);
  - `_io_uring_rules`: no io_uring (it could open sockets and files without the calls below);
  - `_socket_rules`: socket() and socketpair() only for AF_UNIX, and, in the worker of a component
    that runs a process group (`allow_inet`: gloo on 127.0.0.1), AF_INET, AF_INET6 and
    AF_NETLINK with NETLINK_ROUTE (getifaddrs(3): gloo lists the interfaces). Anything else fails
    with EAFNOSUPPORT. Without AF_INET a worker has no TCP socket: no network where the grader
    could not make a network namespace, and no TCP buffers (memory its cgroup v1 does not count);
  - `_ipc_rules`: no System V IPC (shm*, sem*, msg*) nor POSIX message queues (mq_*), EPERM:
    their objects outlive the process and are shared by every process of the IPC namespace.
"""

import ctypes
import errno
import platform
import socket
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
BPF_LD_W_ABS, BPF_JMP_JA, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x05, 0x15, 0x35, 0x06
NR, ARCH, ARG0, ARG2 = 0, 4, 16, 32  # offsets in struct seccomp_data (args: low 32 bits, little-endian)
X32_BIT = 0x40000000
NETLINK_ROUTE = 0

# Per machine: AUDIT_ARCH_* and the native system call numbers (asm/unistd_64.h; arm64: asm-generic/unistd.h).
ARCHES = {
    "x86_64": dict(
        arch=0xC000003E,
        socket=41,
        socketpair=53,
        io_uring_setup=425,
        ipc=(29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245),
    ),
    "aarch64": dict(
        arch=0xC00000B7, socket=198, socketpair=199, io_uring_setup=425, ipc=tuple(range(180, 198))
    ),  # mq_open .. shmdt
}


class Asm:
    """A BPF program with labels: `jeq(k, to_true, to_false)` where each target is a label (or
    None: the next instruction); `label(name)` marks the next instruction. Jumps go forward only."""

    def __init__(self):
        self.code: list[tuple] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((BPF_LD_W_ABS, None, None, offset))

    def jeq(self, k: int, true: str | None, false: str | None = None, op: int = BPF_JEQ_K) -> None:
        self.code.append((op, true, false, k))

    def ja(self, target: str) -> None:
        self.code.append((BPF_JMP_JA, None, None, target))

    def ret(self, value: int) -> None:
        self.code.append((BPF_RET_K, None, None, value))

    def deny_any(self, numbers, err: int, name: str) -> None:
        """Return errno err for a system call numbered in `numbers` (its number loaded); go on
        past these instructions for any other. `name` makes their labels unique."""
        for nr in numbers:
            self.jeq(nr, f"{name}_deny")
        self.ja(f"{name}_done")
        self.label(f"{name}_deny")
        self.ret(deny(err))
        self.label(f"{name}_done")

    def bytes(self) -> bytes:
        out = []
        for i, (op, jt, jf, k) in enumerate(self.code):
            off = lambda label, i=i: 0 if label is None else self.labels[label] - i - 1  # noqa: E731
            k = off(k) if op == BPF_JMP_JA else k
            out.append(struct.pack("HBBI", op, off(jt), off(jf), k))
        return b"".join(out)


def deny(err: int) -> int:
    return SECCOMP_RET_ERRNO | err


def _abi_rules(a: Asm, nrs: dict) -> None:
    a.load(ARCH)
    a.jeq(nrs["arch"], "abi_ok")
    a.ret(deny(errno.ENOSYS))
    a.label("abi_ok")
    a.load(NR)
    a.jeq(X32_BIT, None, "abi_done", op=BPF_JGE_K)
    a.ret(deny(errno.ENOSYS))
    a.label("abi_done")


def _io_uring_rules(a: Asm, nrs: dict) -> None:
    a.load(NR)
    a.jeq(nrs["io_uring_setup"], None, "io_uring_done")
    a.ret(deny(errno.ENOSYS))
    a.label("io_uring_done")


def _socket_rules(a: Asm, nrs: dict, allow_inet: bool) -> None:
    a.load(NR)
    a.jeq(nrs["socket"], "family")
    a.jeq(nrs["socketpair"], "family", "socket_done")
    a.label("family")
    a.load(ARG0)
    a.jeq(socket.AF_UNIX, "socket_allow")
    if allow_inet:
        a.jeq(socket.AF_INET, "socket_allow")
        a.jeq(socket.AF_INET6, "socket_allow")
        a.jeq(socket.AF_NETLINK, None, "socket_deny")
        a.load(ARG2)
        a.jeq(NETLINK_ROUTE, "socket_allow")
    a.label("socket_deny")
    a.ret(deny(errno.EAFNOSUPPORT))
    a.label("socket_allow")
    a.ret(SECCOMP_RET_ALLOW)
    a.label("socket_done")


def _ipc_rules(a: Asm, nrs: dict) -> None:
    a.load(NR)
    a.deny_any(nrs["ipc"], errno.EPERM, "ipc")


def program(machine: str | None = None, allow_inet: bool = False) -> bytes:
    """The filter, as struct sock_filter[] bytes; KeyError for an unknown machine."""
    nrs = ARCHES[machine or platform.machine()]
    a = Asm()
    _abi_rules(a, nrs)
    _io_uring_rules(a, nrs)
    _socket_rules(a, nrs, allow_inet)
    _ipc_rules(a, nrs)
    a.ret(SECCOMP_RET_ALLOW)
    return a.bytes()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(allow_inet: bool = False) -> None:
    """Install the filter on this thread (and the threads and processes it will start); OSError if refused."""
    _install(program(allow_inet=allow_inet))


def _install(filt: bytes) -> None:
    buf = ctypes.create_string_buffer(filt, len(filt))
    prog = _SockFprog(len(filt) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {errno.errorcode.get(err, err)}")


# ------------------------------------------------------------ no new threads or processes
# A second filter, stacked on the first by the worker itself (worker.py) before the submission's
# package is imported, in every worker but the one that runs the tensor-parallel component (whose
# adapters fork ranks): the built-in recorder sees only the thread that calls the adapter, so
# graded code must not run anywhere else (a thread joined before the kernel returns, a forked
# child, a helper that outlives its case). clone(2) is refused with EPERM whatever its flags
# (threads and processes both come from it), clone3(2) with ENOSYS so that glibc falls back to
# clone (whose flags a classic BPF filter can read; clone3's are behind a pointer), and the
# legacy fork(2) and vfork(2) with EPERM. What torch needs under it (tests/staff/test_hostile.py
# checks): nothing, with torch.set_num_threads(1) (the worker's setting: no intra-op pool) and the
# legacy profiler as the recorder's observer; the kineto profiler would start a thread and fail
# (EPERM), and gloo's process groups start threads and processes, hence the tensor-parallel
# component's exemption.
# machine -> (clone, clone3, (fork, vfork) or ())
TASK_CALLS = {"x86_64": (56, 435, (57, 58)), "aarch64": (220, 435, ())}


def _no_new_tasks_rules(a: Asm, machine: str) -> None:
    nr_clone, nr_clone3, legacy = TASK_CALLS[machine]
    a.load(NR)
    a.jeq(nr_clone3, None, "clone3_done")
    a.ret(deny(errno.ENOSYS))  # glibc falls back to clone, whose flags the kernel shows us
    a.label("clone3_done")
    a.deny_any((nr_clone, *legacy), errno.EPERM, "task")


def no_new_tasks_program(machine: str | None = None) -> bytes:
    """The filter refusing thread and process creation, as struct sock_filter[] bytes."""
    machine = machine or platform.machine()
    a = Asm()
    _abi_rules(a, ARCHES[machine])  # another ABI: refused (the first filter refuses it too)
    _no_new_tasks_rules(a, machine)
    a.ret(SECCOMP_RET_ALLOW)
    return a.bytes()


def install_no_new_tasks() -> None:
    """Refuse, from now on, every new thread and process of this process; OSError if refused.
    Needs PR_SET_NO_NEW_PRIVS (sandbox.enter sets it) or CAP_SYS_ADMIN."""
    _install(no_new_tasks_program())
