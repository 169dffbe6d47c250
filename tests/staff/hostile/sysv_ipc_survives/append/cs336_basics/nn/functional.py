
# hostile sample: System V IPC objects and a POSIX queue that outlive the worker
import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.shmget(0x0C533600, 1 << 20, 0o1666)  # IPC_CREAT | 0666
_libc.semget(0x0C533601, 4, 0o1666)
_libc.msgget(0x0C533602, 0o1666)
_libc.mq_open.restype = _ctypes.c_int
_libc.mq_open(b"/cs336hostile", _os.O_CREAT | _os.O_RDWR, 0o666, None)
