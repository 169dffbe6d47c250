"""The `hidden_snapshot` fixture: as tests/conftest.py's `snapshot`, but it loads from
hidden_fixtures/ and its failure messages never show an expected value."""

import pytest

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.make_fixtures import HIDDEN_FIXTURES_DIR
from cs336_basics.testing import compare


class HiddenSnapshot:
    """Loads a hidden fixture and checks an output against it (see cs336_basics/testing.py)."""

    def __init__(self, record_property):
        self._record = record_property

    def load(self, name: str):
        return load_fixture(name, HIDDEN_FIXTURES_DIR)

    def check(self, actual, fixture, tol: float) -> None:
        result = compare(actual, fixture.expected, tol, out_dtype=fixture.out_dtype, reveal_values=False)
        self._record("fixture", fixture.name)
        self._record("max_abs_err", result.max_abs_err)
        self._record("max_scaled_err", result.max_scaled_err)
        if not result.ok:
            pytest.fail(f"{fixture.adapter} on hidden fixture {fixture.name!r}: {result.message}", pytrace=False)


@pytest.fixture
def hidden_snapshot(record_property) -> HiddenSnapshot:
    return HiddenSnapshot(record_property)
