import pytest

from cs336_basics.fixture_io import FIXTURES_DIR, load_fixture
from cs336_basics.testing import compare


class Snapshot:
    """Loads a stored fixture and checks an output against it (see cs336_basics/testing.py).
    The hidden suite uses it with its own directory and reveal_values=False."""

    def __init__(self, record_property, directory=FIXTURES_DIR, reveal_values: bool = True):
        self._record = record_property
        self.directory = directory
        self.reveal_values = reveal_values

    def load(self, name: str):
        return load_fixture(name, self.directory)

    def check(self, actual, fixture, tol: float) -> None:
        result = compare(actual, fixture.expected, tol, out_dtype=fixture.out_dtype, reveal_values=self.reveal_values)
        self._record("fixture", fixture.name)
        self._record("max_abs_err", result.max_abs_err)
        self._record("max_scaled_err", result.max_scaled_err)
        if not result.ok:
            pytest.fail(f"{fixture.adapter} on fixture {fixture.name!r}: {result.message}", pytrace=False)


@pytest.fixture
def snapshot(record_property) -> Snapshot:
    return Snapshot(record_property)


def pytest_configure(config):
    config.addinivalue_line("markers", "smollm2: slow tests on the real SmolLM2 weights (run with -k smollm2 or the full suite)")


def pytest_collection_modifyitems(config, items):
    """With a -k expression that does not name smollm2 (`-k lm`, `-k generate`), the slow
    SmolLM2 tests are deselected even where their names match; without -k they run."""
    keyword = config.getoption("keyword")
    if not keyword or "smollm2" in keyword:
        return
    slow = [item for item in items if item.get_closest_marker("smollm2")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("smollm2")]
