"""The grade checks at least what the public suite checks: every public test of a component in
cs336_basics/staff/graded_behaviours.py is tied to graded cases of that component (or declared
ungraded, with why), and every confuser the public suite catches loses points in the grade."""

import ast
from pathlib import Path

import pytest
import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES, CONFUSERS
from cs336_basics.staff.graded_behaviours import (
    DTYPE_TESTS,
    GRADED,
    MODULE_TEST,
    SHARED_FILES,
    SHARED_GRADED,
    SHARED_UNGRADED,
    TOOLING_FILES,
    UNGRADED,
    forward_cases_in,
    init_cases_of,
)
from cs336_basics.staff.grader.config import load_config
from cs336_basics.testing import compare

from .. import adapters
from ..test_dtypes import KERNELS as DTYPE_ROWS
from ..test_module_dtypes import MODULES

TESTS = Path(__file__).resolve().parents[1]
CONFIG = load_config()
# test_dtypes.py's rows are named after their kernel's component, or start with it ("gelu_tanh");
# its tests of them are graded by that component's forward cases in their dtypes
DTYPE_COMPONENTS = {c for c in COMPONENTS for row in DTYPE_ROWS if row == c or row.startswith(f"{c}_")}
SHARED = SHARED_GRADED | {test: forward_cases_in(DTYPE_COMPONENTS, dtypes) for test, dtypes in DTYPE_TESTS.items()}
# test_module_dtypes.py's modules are named after their component's file
SHARED[MODULE_TEST] = init_cases_of(set(MODULES) & set(COMPONENTS))


def functions_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def component_files(component: str) -> list[Path]:
    """tests/test_<component>.py and tests/test_<component>_*.py."""
    return [p for p in (TESTS / f"test_{component}.py", *TESTS.glob(f"test_{component}_*.py")) if p.exists()]


def public_tests(component: str) -> set[str]:
    """The test functions of the component's own files."""
    return set().union(*(functions_of(p) for p in component_files(component)))


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


def test_graded_behaviours_know_every_public_test_file():
    owned = {p.name for c in CONFIG.points for p in component_files(c)}
    unknown = {p.name for p in TESTS.glob("test_*.py")} - owned - set(SHARED_FILES) - set(TOOLING_FILES)
    assert unknown == set(), "public test files of no component, not shared and not tooling"


def test_graded_behaviours_cover_every_test_of_the_shared_files():
    every = set().union(*(functions_of(TESTS / f) for f in SHARED_FILES))
    assert every - set(SHARED) - set(SHARED_UNGRADED) == set(), "shared tests neither graded nor excused"
    assert set(SHARED) | set(SHARED_UNGRADED) <= every, "a listed shared test that does not exist"


@pytest.mark.parametrize("test", sorted(SHARED))
def test_graded_behaviours_name_graded_cases_of_each_component_a_shared_test_checks(test):
    by_component = {c.name: c.component for c in CASES}
    for component, cases in SHARED[test].items():
        assert cases, f"{test}: no graded case for {component}"
        assert {by_component.get(case) for case in cases} == {component}, f"{test}: {cases} are not {component}'s"


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
