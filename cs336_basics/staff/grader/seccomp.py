"""A seccomp filter for the worker: socket() and socketpair() only for AF_UNIX, AF_INET and
AF_INET6, and AF_NETLINK with NETLINK_ROUTE (getifaddrs(3) uses it: gloo's TCP device lists the
interfaces; in the worker's network namespace it sees only "lo" and may change nothing without
CAP_NET_ADMIN). Others (AF_VSOCK, AF_PACKET, other netlink protocols, ...) fail with EAFNOSUPPORT; no io_uring
(which could open sockets without those calls), and no system call of another ABI (x32, i386:
the filter knows only the native numbers). Installed with prctl(PR_SET_SECCOMP) and a classic BPF
program assembled here (seccomp(2), linux/filter.h); needs PR_SET_NO_NEW_PRIVS first.
"""

import ctypes
import errno
import platform
import socket
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
# machine -> (AUDIT_ARCH_*, socket, socketpair, io_uring_setup)
ARCHES = {"x86_64": (0xC000003E, 41, 53, 425), "aarch64": (0xC00000B7, 198, 199, 425)}
X32_BIT = 0x40000000
ALLOWED_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
NETLINK_ROUTE = 0  # AF_NETLINK only with this protocol: getifaddrs(3), which gloo calls


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes:
    """The filter, as struct sock_filter[] bytes; KeyError for an unknown machine."""
    arch, nr_socket, nr_socketpair, nr_io_uring = ARCHES[machine or platform.machine()]
    ret = lambda value: _insn(BPF_RET_K, 0, 0, value)  # noqa: E731
    deny = lambda err: SECCOMP_RET_ERRNO | err  # noqa: E731
    n = len(ALLOWED_FAMILIES)
    code = [
        _insn(BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(BPF_JEQ_K, 1, 0, arch),
        ret(deny(errno.ENOSYS)),  # another ABI
        _insn(BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        _insn(BPF_JGE_K, 0, 1, X32_BIT),
        ret(deny(errno.ENOSYS)),
        _insn(BPF_JEQ_K, 0, 1, nr_io_uring),
        ret(deny(errno.ENOSYS)),
        _insn(BPF_JEQ_K, 1, 0, nr_socket),
        _insn(BPF_JEQ_K, 0, 5 + n, nr_socketpair),  # neither: to the ALLOW at the end
        _insn(BPF_LD_W_ABS, 0, 0, 16),  # seccomp_data.args[0], low 32 bits (little-endian): the family
    ]
    for i, family in enumerate(ALLOWED_FAMILIES):
        code.append(_insn(BPF_JEQ_K, n - i + 3, 0, family))  # to the ALLOW at the end
    code += [
        _insn(BPF_JEQ_K, 0, 2, socket.AF_NETLINK),  # not netlink either: to the deny
        _insn(BPF_LD_W_ABS, 0, 0, 32),  # seccomp_data.args[2], low 32 bits: the protocol
        _insn(BPF_JEQ_K, 1, 0, NETLINK_ROUTE),
        ret(deny(errno.EAFNOSUPPORT)),
        ret(SECCOMP_RET_ALLOW),
    ]
    return b"".join(code)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> None:
    """Install the filter on this thread (and the threads and processes it will start); OSError if refused."""
    _install(program())


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


def no_new_tasks_program(machine: str | None = None) -> bytes:
    """The filter refusing thread and process creation, as struct sock_filter[] bytes."""
    machine = machine or platform.machine()
    arch = ARCHES[machine][0]
    nr_clone, nr_clone3, legacy = TASK_CALLS[machine]
    ret = lambda value: _insn(BPF_RET_K, 0, 0, value)  # noqa: E731
    refused = (nr_clone, *legacy)
    code = [
        _insn(BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(BPF_JEQ_K, 1, 0, arch),
        ret(SECCOMP_RET_ERRNO | errno.ENOSYS),  # another ABI (the first filter refuses it too)
        _insn(BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        _insn(BPF_JEQ_K, 0, 1, nr_clone3),
        ret(SECCOMP_RET_ERRNO | errno.ENOSYS),
    ]
    for i, nr in enumerate(refused):  # each: to the EPERM just after the list
        code.append(_insn(BPF_JEQ_K, len(refused) - i, 0, nr))
    code += [ret(SECCOMP_RET_ALLOW), ret(SECCOMP_RET_ERRNO | errno.EPERM)]
    return b"".join(code)


def install_no_new_tasks() -> None:
    """Refuse, from now on, every new thread and process of this process; OSError if refused.
    Needs PR_SET_NO_NEW_PRIVS (sandbox.enter sets it) or CAP_SYS_ADMIN."""
    _install(no_new_tasks_program())
