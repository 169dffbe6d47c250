import pytest

from cs336_basics.staff.hidden_cases import hidden_tolerances
from tests.adapters import run_linear

TOL = hidden_tolerances("linear")  # case -> tolerance(measured floor, dtype), floors in hidden_cases.py


@pytest.mark.parametrize("case", TOL)
def test_hidden_linear_matches_fixture(case, hidden_snapshot):
    fx = hidden_snapshot.load(case)
    hidden_snapshot.check(run_linear(**fx.kwargs), fx, TOL[case])
