"""The `hidden_snapshot` fixture: tests/conftest.py's `snapshot`, loading from hidden_fixtures/,
whose failure messages never show an expected value."""

import pytest

from cs336_basics.staff.cases import HIDDEN_FIXTURES_DIR
from tests.conftest import Snapshot


@pytest.fixture
def hidden_snapshot(record_property) -> Snapshot:
    return Snapshot(record_property, HIDDEN_FIXTURES_DIR, reveal_values=False)
