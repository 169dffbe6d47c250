"""A pytest plugin for tests/staff/test_test_selection.py: writes, for every collected test, the
names of tests.conftest.SELECTABLE (the components and `train`) whose `pytest -k <name>`
would select it by pytest's substring rule alone (pytest's own keyword matcher) to $KEYWORDS_OUT."""

import json
import os

import pytest
from _pytest.mark import KeywordMatcher  # what `-k` matches against: pytest has no public equivalent

from tests.conftest import SELECTABLE


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    selected_by = {item.nodeid: [c for c in SELECTABLE if KeywordMatcher.from_item(item)(c)] for item in items}
    with open(os.environ["KEYWORDS_OUT"], "w") as f:
        json.dump(selected_by, f)
