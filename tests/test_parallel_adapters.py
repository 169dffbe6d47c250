"""The tensor-parallel adapters: full weights in, whole output out, equal to the stored fixtures.
Each call starts its own group of two ranks. The course staff's suite also calls them with 1, 2
and 4 ranks against PyTorch's built-ins (tests/staff/test_parallel_world_sizes.py)."""

import pytest

from cs336_basics.fixture_io import fixture_names

from . import _parallel as P
from . import adapters

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


@pytest.mark.parametrize("case", fixture_names("parallel"))
def test_parallel_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)
