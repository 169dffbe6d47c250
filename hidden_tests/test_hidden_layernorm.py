import pytest

from cs336_basics.staff.hidden_cases import hidden_tolerances
from tests.adapters import run_layernorm

TOL = hidden_tolerances("layernorm")  # case -> tolerance(measured floor, dtype), floors in hidden_cases.py


@pytest.mark.parametrize("case", TOL)
def test_hidden_layernorm_matches_fixture(case, hidden_snapshot):
    fx = hidden_snapshot.load(case)
    hidden_snapshot.check(run_layernorm(**fx.kwargs), fx, TOL[case])
