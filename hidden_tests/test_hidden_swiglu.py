import pytest

from cs336_basics.staff.hidden_cases import hidden_tolerances
from tests.adapters import run_swiglu

TOL = hidden_tolerances("swiglu")  # case -> tolerance(measured floor, dtype), floors in hidden_cases.py


@pytest.mark.parametrize("case", TOL)
def test_hidden_swiglu_matches_fixture(case, hidden_snapshot):
    fx = hidden_snapshot.load(case)
    hidden_snapshot.check(run_swiglu(**fx.kwargs), fx, TOL[case])
