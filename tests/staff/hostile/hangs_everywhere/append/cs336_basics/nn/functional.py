
# hostile sample: every adapter sleeps forever; a sleeper outlives the worker if it can
import ctypes as _ctypes
import os as _os
import sys as _sys
import time as _time

try:
    _pid = _os.fork()
except OSError:  # refused (seccomp) in every worker but the tensor-parallel one: then no sleeper, still a hang
    _pid = -1
if _pid == 0:
    _os.setsid()
    _ctypes.CDLL(None).prctl(15, b"cs336hang", 0, 0, 0)  # PR_SET_NAME
    while True:
        _time.sleep(3600)


def _hang(frame, event, arg):
    if event == "call" and frame.f_code.co_name.startswith("run_") and frame.f_code.co_filename.endswith("adapters.py"):
        while True:
            _time.sleep(3600)


_sys.settrace(_hang)  # not setprofile: the grader's call rule owns the profile hook
