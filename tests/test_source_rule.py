"""Your package's source against the rule on what it may name (cs336_basics/source_rule.py): the
whole list at once. Each component's snapshot tests also fail while code they run breaks it, as
the grade does."""

from cs336_basics import source_rule

from ._helpers import PACKAGE_DIR


def test_package_source_names_only_what_the_rule_allows():
    found = source_rule.check_package(PACKAGE_DIR)
    assert not found, source_rule.explain(found, limit=20)
