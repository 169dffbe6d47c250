"""A name is never wrong: no snapshot test gives a known wrong implementation (a catalogued
mistake or a confuser, cs336_basics/staff/cases/<area>.py) the name of another mistake.
A fingerprint several of them reproduce carries what the output shows instead (make_fixtures.py);
this checks that rule on every public case each of them fails."""

import pytest
import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CONFUSERS, MISTAKES, PUBLIC_CASES
from cs336_basics.testing import SHOWS, compare, likely_mistakes

from .. import adapters

FIXTURES = {c.name: load_fixture(c.name) for c in PUBLIC_CASES}
WRONG = [*MISTAKES, *CONFUSERS]


def names_given(wrong) -> dict[str, list[str]]:
    """{public case of its component it fails: the mistake names (not SHOWS lines) given there}."""
    given = {}
    for case, fx in FIXTURES.items():
        if fx.component != wrong.component:
            continue
        with wrong.applied(), torch.no_grad():
            try:
                actual = getattr(adapters, fx.adapter)(**fx.kwargs)
            except getattr(wrong, "raises", ()):
                continue
        if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
            given[case] = [d for d in likely_mistakes(actual, fx) if not d.startswith(SHOWS)]
    return given


@pytest.mark.parametrize("wrong", WRONG, ids=[w.name for w in WRONG])
def test_names_a_snapshot_test_gives_a_wrong_implementation_only_its_own(wrong):
    own = getattr(wrong, "diagnosis", None)
    wrong_names = {case: names for case, names in names_given(wrong).items() if set(names) - {own}}
    assert wrong_names == {}, f"{wrong.name} is given another mistake's name"
