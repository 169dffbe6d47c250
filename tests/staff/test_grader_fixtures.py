"""Staff only: the grader's fixtures module owns the flag "this process has read expected values",
which keeps such a process from becoming the workers' forkserver (runner.start_forkserver)."""

import subprocess
import sys

from cs336_basics import REPO

FORKS_FROM_HERE = """
from multiprocessing import forkserver, util
from cs336_basics.staff.grader import fixtures, runner
from cs336_basics.staff.grader.cases import graded_cases

runner.PRELOAD[:] = []  # nothing to import: only which way the forkserver starts is asked
forkserver.ensure_running = lambda: print(fixtures.has_read_expected_values(), util.spawnv_passfds.__name__)
runner.start_forkserver(fork_from_here=True)
graded_cases(["silu"])
runner.start_forkserver(fork_from_here=True)
"""


def test_grader_fixtures_flag_keeps_a_process_that_read_expected_values_from_forking_the_workers():
    """Before any fixture is read the forkserver is a fork of this process; once graded_cases has
    read the fixtures (their expected outputs included) it is a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", FORKS_FROM_HERE], cwd=REPO, capture_output=True, text=True)
    assert done.stdout.split("\n")[:2] == ["False fork_instead", "True spawnv_passfds"], done.stdout + done.stderr
