"""Staff only: the stored fixture files are exactly what the committed generator makes now."""

import pytest

staff = pytest.importorskip("cs336_basics.staff.make_fixtures", reason="staff-only generator not present")


def test_stored_fixtures_equal_what_the_generator_makes():
    assert staff.drifted() == [], "fixtures drifted from the generator: run `uv run cs336 fixtures`"


def test_no_fixture_file_without_a_case():
    assert staff.stale_files() == [], "fixture files that no case generates: delete them or add a case"
