"""The tensor-parallel adapters: full weights in, whole output out, equal to the stored fixtures
(two ranks). The course staff's suite also compares them with PyTorch's built-ins: the FFN with
1, 2 and 4 ranks, the column- and row-parallel layers with 4. As the grader does, each rank
records what the adapter calls there and fails the case if it called a built-in `parallel` may
not use (cs336_basics/builtin_guard.py): the conftest's rule sees only this process."""

import functools

import pytest

from cs336_basics.builtin_guard import assert_no_builtins
from cs336_basics.fixture_io import fixture_names, load_fixture

from . import _parallel as P
from . import adapters

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


def _case_on_rank(case: str, rank: int, world_size: int):
    """On one rank: the case's adapter, if the case is for a group of this size (run_sharded then
    computes this rank's part in this group), recorded there (Python-level calls, as at home for
    every component)."""
    fx = load_fixture(case)
    if fx.kwargs["world_size"] != world_size:
        return None
    with assert_no_builtins("parallel", dispatch=False):
        return getattr(adapters, fx.adapter)(**fx.kwargs)


CASES = fixture_names("parallel")
JOBS = tuple((case, functools.partial(_case_on_rank, case)) for case in CASES)  # one launch per group size


@pytest.mark.parametrize("case", CASES)
def test_parallel_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(P.shared_launch(JOBS, case, fx.kwargs["world_size"])[0], fx)
