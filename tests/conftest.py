import pytest

from cs336_basics.fixture_io import load_fixture
from cs336_basics.testing import compare


class Snapshot:
    """Loads a stored fixture and checks an output against it (see cs336_basics/testing.py)."""

    def __init__(self, record_property):
        self._record = record_property

    def load(self, name: str):
        return load_fixture(name)

    def check(self, actual, fixture, tol: float) -> None:
        result = compare(actual, fixture.expected, tol, out_dtype=fixture.out_dtype)
        self._record("fixture", fixture.name)
        self._record("max_abs_err", result.max_abs_err)
        self._record("max_scaled_err", result.max_scaled_err)
        if not result.ok:
            pytest.fail(f"{fixture.adapter} on fixture {fixture.name!r}: {result.message}", pytrace=False)


@pytest.fixture
def snapshot(record_property) -> Snapshot:
    return Snapshot(record_property)
