"""The `hidden_snapshot` fixture: tests/conftest.py's `snapshot`, loading from hidden_fixtures/,
whose failure messages never show an expected value; and which staff tests are second tier."""

import pytest

from cs336_basics.staff.cases import HIDDEN_FIXTURES_DIR
from tests.conftest import Snapshot


@pytest.fixture
def hidden_snapshot(record_property) -> Snapshot:
    return Snapshot(record_property, HIDDEN_FIXTURES_DIR, reveal_values=False)


# Fixtures that grade the whole sample set of tests/staff/test_grader.py: a test that needs one
# is in the second tier (the first grades only the reference and the untouched handout).
SAMPLE_SET_FIXTURES = {"graded", "samples", "gradescope_run"}


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py leaves the second tier out
def pytest_collection_modifyitems(items):
    for item in items:
        if SAMPLE_SET_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
