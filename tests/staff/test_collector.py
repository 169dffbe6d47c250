"""tests/conftest.py keeps the cyclic garbage collector off while torch and the package are
imported and freezes what they built: the tests themselves run with the collector on, and its
passes walk only what the tests make."""

import gc


def test_the_collector_is_on_while_tests_run():
    assert gc.isenabled()


def test_what_the_imports_built_is_frozen():
    assert gc.get_freeze_count() > 100_000  # torch's modules, functions and classes among them
