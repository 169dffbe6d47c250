import pytest

from cs336_basics.staff.hidden_cases import hidden_tolerances
from tests.adapters import run_ffn_block

TOL = hidden_tolerances("ffn_block")  # case -> tolerance(measured floor, dtype), floors in hidden_cases.py


@pytest.mark.parametrize("case", TOL)
def test_hidden_ffn_block_matches_fixture(case, hidden_snapshot):
    fx = hidden_snapshot.load(case)
    hidden_snapshot.check(run_ffn_block(**fx.kwargs), fx, TOL[case])
