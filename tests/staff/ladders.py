"""The ladder rungs of a component (tests/test_<component>_ladder.py), run as plain functions:
which rung a patched implementation fails first, and what it says. Staff tests and the naming
report use it; students see the same rungs through pytest (tests/conftest.py orders them)."""

import importlib
from collections.abc import Callable

import pytest

from cs336_basics import COMPONENTS


def rungs(component: str) -> list[tuple[int, str, Callable]]:
    """[(rung, test name, function)] of the component's ladder, lowest rung first; [] without one."""
    try:
        module = importlib.import_module(f"tests.test_{component}_ladder")
    except ModuleNotFoundError:
        return []
    found = []
    for name, fn in vars(module).items():
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "rung"]
        if name.startswith("test_") and marks:
            found.append((marks[0].args[0], name, fn))
    return sorted(found, key=lambda r: r[0])


LADDERED = [c for c in COMPONENTS if rungs(c)]


def first_failed_rung(component: str) -> tuple[str, str] | None:
    """(test name, message) of the lowest rung that fails with the code as it is now; None if all pass.
    An exception raised by the code under test is that rung's failure, named by its type."""
    for _, name, fn in rungs(component):
        try:
            fn()
        except pytest.fail.Exception as e:
            return name, str(e)
        except Exception as e:  # noqa: BLE001 -- the implementation under test raised
            return name, f"raised {type(e).__name__}: {e}"
    return None
