"""The hidden suite: every hidden case through its adapter, judged by its stored tolerance.
Test ids start with the component, so `pytest -k <component>` selects its hidden cases too."""

import pytest

from cs336_basics.staff.cases import HIDDEN_CASES
from tests import adapters


@pytest.mark.parametrize("case", HIDDEN_CASES, ids=[f"{c.component}-{c.name}" for c in HIDDEN_CASES])
def test_hidden_case_matches_fixture(case, hidden_snapshot):
    fx = hidden_snapshot.load(case.name)
    hidden_snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)
