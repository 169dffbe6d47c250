"""Whether a worker's user can run the grader's Python: every directory a worker imports from
(the interpreter's standard library and the environment's site-packages: the sys.path entries
under its prefixes) readable and searchable by it, and the modules a grading imports after the
user switch importable. Workers import lazily once they run as that user (torch.load imports
torch.utils.serialization, a tensor-parallel launch multiprocessing.popen_fork), so an
environment only root can read (a Python under /root, as pyenv installs it; a bundle unpacked
under a mode-700 directory) would fail every case of every submission: the grader refuses instead.
"""

import importlib
import os
import sys

FIX = (
    "install Python where every user can read it (setup.sh sets UV_PYTHON_INSTALL_DIR=/opt/uv-python) "
    "and keep the bundle and its .venv out of private directories such as /root"
)
# The layer below the directory check: modules a grading imports only after the user switch, in
# workers forked from a process that imported their top-level package.
LAZY_IMPORTS = ("torch.utils.serialization", "multiprocessing.popen_fork", "multiprocessing.popen_forkserver")


def import_dirs() -> list[str]:
    """The sys.path entries a worker keeps: those under the interpreter's and environment's prefixes."""
    prefixes = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    return [p for p in sys.path if p and os.path.realpath(p).startswith(prefixes)]


def first_closed(path: str) -> str:
    """The first directory on the way to `path` this process may not search, else `path` itself."""
    parts = os.path.abspath(path).split(os.sep)
    for n in range(2, len(parts)):
        here = os.sep.join(parts[:n])
        if not os.access(here, os.X_OK):
            return here
    return path


def problem() -> str | None:
    """Run as the worker's user: None, or why it cannot import what a grading imports (naming the
    path it cannot read, and the fix)."""
    for d in dict.fromkeys([sys.base_prefix, sys.prefix, *import_dirs()]):
        try:
            os.stat(d)
        except FileNotFoundError:
            continue  # an entry that exists nowhere (python311.zip): nothing to read
        except OSError:
            pass  # a closed directory on the way: os.access says so below
        if not os.access(d, os.R_OK | os.X_OK):
            return (
                f"the grading processes (an unprivileged user) cannot read {first_closed(d)}, on the way "
                f"to Python's modules in {d}: {FIX}"
            )
    for name in LAZY_IMPORTS:
        if name.split(".")[0] not in sys.modules:
            continue  # a submodule of what this process never imported (torch, in the CLI's probe)
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - any failure here is the environment's
            return f"the grading processes (an unprivileged user) cannot import {name} ({type(e).__name__}: {e}): {FIX}"
    return None
