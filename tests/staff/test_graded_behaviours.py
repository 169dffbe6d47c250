"""The grade checks at least what the public suite checks: every public test of a component in
cs336_basics/staff/graded_behaviours.py is tied to graded cases of that component (or declared
ungraded, with why), and every confuser the public suite catches loses points in the grade."""

import ast
from pathlib import Path

import pytest
import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES
from cs336_basics.staff.graded_behaviours import GRADED, UNGRADED
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.mistakes import CONFUSERS
from cs336_basics.testing import compare

from .. import adapters

TESTS = Path(__file__).resolve().parents[1]
CONFIG = load_config()


def public_tests(component: str) -> set[str]:
    """The test functions of tests/test_<component>.py and tests/test_<component>_*.py."""
    names = set()
    for path in (TESTS / f"test_{component}.py", *TESTS.glob(f"test_{component}_*.py")):
        if path.exists():
            tree = ast.parse(path.read_text())
            names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    return names


def test_graded_behaviours_list_every_graded_component():
    assert set(GRADED) == set(CONFIG.points)


def test_graded_behaviours_excuse_only_public_tests_that_exist():
    every = set().union(*(public_tests(c) for c in CONFIG.points))
    assert set(UNGRADED) - every == set()


@pytest.mark.parametrize("component", sorted(CONFIG.points))
def test_graded_behaviours_cover_every_public_test_of_the_component(component):
    uncovered = public_tests(component) - set(GRADED.get(component, {})) - set(UNGRADED)
    assert uncovered == set(), f"public tests of {component} that no graded case checks"


@pytest.mark.parametrize("component", GRADED)
def test_graded_behaviours_name_graded_cases_of_the_component(component):
    cases = {c.name for c in CASES if c.component == component}
    listed = {case for graded in GRADED[component].values() for case in graded}
    assert listed - cases == set()
    assert [test for test, graded in GRADED[component].items() if not graded] == []
    assert set(GRADED[component]) <= public_tests(component), "a listed test that does not exist"


def failed_graded_cases(wrong) -> list[str]:
    """The graded cases (public and hidden, on their stored inputs) of its component it fails."""
    failed = []
    for case in (c for c in CASES if c.component == wrong.component):
        fx = load_fixture(case.name, case.directory)
        with wrong.applied(), torch.no_grad():
            try:
                actual = getattr(adapters, fx.adapter)(**fx.kwargs)
            except Exception:  # noqa: BLE001 -- a case it raises on is a case it fails
                failed.append(case.name)
                continue
        if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
            failed.append(case.name)
    return failed


@pytest.mark.parametrize("wrong", CONFUSERS, ids=[c.name for c in CONFUSERS])
def test_graded_behaviours_every_confuser_loses_points(wrong):
    assert failed_graded_cases(wrong), f"{wrong.name} keeps full marks"
