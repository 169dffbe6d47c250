"""The ladder: checks a correct implementation must pass, run before a component's snapshot test.

Each rung is a test marked `@pytest.mark.rung(n)`; tests/conftest.py runs rungs first, lowest n
first, then the snapshot tests (whose fingerprints name catalogued mistakes: the last rung), then
the rest. A rung fails with `climb_failed(observed, look_at)`: what the output showed and where in
the code to look, so the first failure of `pytest -k <component>` is the most basic one."""

import pytest

rung = pytest.mark.rung


def climb_failed(observed: str, look_at: str) -> None:
    """Fail the current rung: "observed: ...\n  look at: ..." (alone: not chained to an exception
    being handled, whose text the observation already carries)."""
    raise pytest.fail.Exception(f"observed: {observed}\n  look at: {look_at}", pytrace=False) from None
