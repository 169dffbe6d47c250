import pytest

from cs336_basics.staff.hidden_cases import hidden_tolerances
from tests.adapters import run_gelu

TOL = hidden_tolerances("gelu")  # case -> tolerance(measured floor, dtype), floors in hidden_cases.py


@pytest.mark.parametrize("case", TOL)
def test_hidden_gelu_matches_fixture(case, hidden_snapshot):
    fx = hidden_snapshot.load(case)
    hidden_snapshot.check(run_gelu(**fx.kwargs), fx, TOL[case])
