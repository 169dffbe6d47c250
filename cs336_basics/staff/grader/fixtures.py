"""The fixtures the grader reads in its own process, and the one flag that says it has.

A process that has read an expected value must never become the workers' forkserver
(runner.start_forkserver): a fork of it would hold what a student's code may not see.
`has_read_expected_values()` is that rule's only input; it is set before the first file is
read and never cleared.
"""

import functools
from pathlib import Path

from cs336_basics import fixture_io
from cs336_basics.fixture_io import Fixture

_read_expected_values = False


def has_read_expected_values() -> bool:
    """True once this process has started reading any fixture (expected outputs included)."""
    return _read_expected_values


@functools.lru_cache(maxsize=1024)
def _load_version(path: Path, mtime_ns: int) -> Fixture:
    """One fixture file, read once per version (grade-all grades many submissions against it)."""
    return fixture_io.load_fixture(path.stem, path.parent)


def load_fixture(path: Path) -> Fixture:
    """The fixture stored at path (a cached copy while the file is unchanged)."""
    global _read_expected_values
    _read_expected_values = True  # before reading: a failed read may have loaded part of it
    return _load_version(path, path.stat().st_mtime_ns)
