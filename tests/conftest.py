import pytest

from cs336_basics.fixture_io import FIXTURES_DIR, load_fixture
from cs336_basics.testing import compare, likely_mistakes


class Snapshot:
    """Loads a stored fixture and checks an output against it with the tolerance stored in the
    fixture (see cs336_basics/testing.py). The hidden suite uses it with its own directory and
    reveal_values=False."""

    def __init__(self, record_property, directory=FIXTURES_DIR, reveal_values: bool = True):
        self._record = record_property
        self.directory = directory
        self.reveal_values = reveal_values

    def load(self, name: str):
        return load_fixture(name, self.directory)

    def check(self, actual, fixture) -> None:
        result = compare(actual, fixture.expected, fixture.tol, out_dtype=fixture.out_dtype, reveal_values=self.reveal_values)
        self._record("fixture", fixture.name)
        self._record("max_abs_err", result.max_abs_err)
        self._record("max_scaled_err", result.max_scaled_err)
        if not result.ok:
            named = likely_mistakes(actual, fixture)
            hint = "".join(f"\n  likely mistake: your output equals what {d} gives" for d in named)
            pytest.fail(f"{fixture.adapter} on fixture {fixture.name!r}: {result.message}{hint}", pytrace=False)


@pytest.fixture
def snapshot(record_property) -> Snapshot:
    return Snapshot(record_property)


def pytest_collection_modifyitems(items):
    """Snapshot tests (`test_<component>_matches_fixture`) first: a component's first failure is
    then the comparison with its fixture, which names the likely mistake."""
    items.sort(key=lambda item: "matches_fixture" not in item.name)
