"""Every component of `cs336_basics.COMPONENTS` is in every registry that must know it
(docs/adding-a-component.md lists them): a component missing from one is not graded, not
guarded or not taught, and no other test would say so."""

import re

import pytest

from cs336_basics import COMPONENTS, POINTS, REPO
from cs336_basics.builtin_guard import BANNED, banned_for
from cs336_basics.staff.cases import CASES, MISTAKES
from cs336_basics.staff.grader.config import load_config
from tests import adapters

from .test_graded_behaviours import GRADED, component_files, public_tests

PAGE = REPO / "docs" / "adding-a-component.md"
HANDOUT = (REPO / "handout" / "README.md").read_text()


def test_adding_a_component_banned_built_ins_name_only_components():
    # an entry naming no component guards nothing; a component without one is held to _ANYWHERE
    assert set(BANNED) <= set(COMPONENTS)


def test_adding_a_component_a_component_without_a_banned_entry_is_still_guarded():
    assert banned_for("a_component_not_listed") == BANNED["rope"] != frozenset()


def test_adding_a_component_every_component_has_positive_integer_points():
    bad = {c: p for c, p in POINTS.items() if type(p) is not int or p <= 0}
    assert bad == {}, "cs336_basics/__init__.py: each component's points, a positive integer"


def test_adding_a_component_the_grader_grades_every_component_in_build_order():
    config = load_config()
    assert config.points == POINTS and tuple(config.components) == COMPONENTS


@pytest.mark.parametrize("component", COMPONENTS)
def test_adding_a_component_has_public_and_hidden_cases_with_adapters(component):
    cases = [c for c in CASES if c.component == component]
    assert any(not c.hidden for c in cases) and any(c.hidden for c in cases), "cs336_basics/staff/cases/<area>.py"
    assert [c.adapter for c in cases if not hasattr(adapters, c.adapter)] == [], "tests/adapters.py"


@pytest.mark.parametrize("component", COMPONENTS)
def test_adding_a_component_has_a_test_file_with_its_snapshot_test(component):
    assert component_files(component), f"tests/test_{component}.py"
    assert f"test_{component}_matches_fixture" in public_tests(component)


@pytest.mark.parametrize("component", COMPONENTS)
def test_adding_a_component_has_catalogued_mistakes_and_graded_behaviours(component):
    assert any(m.component == component for m in MISTAKES), "cs336_basics/staff/cases/<area>.py's mistakes"
    assert GRADED.get(component), "cs336_basics/staff/cases/<area>.py's GRADED"


def test_adding_a_component_handout_takes_the_components_in_order_and_specifies_each():
    order = HANDOUT.split("## The order to take the components in")[1].split("\n## ")[0]
    items = re.findall(r"^- (`\w+`(?:, `\w+`)*):", order, re.M)  # "- `silu`, `gelu`: ..."
    assert re.findall(r"`(\w+)`", ", ".join(items)) == list(COMPONENTS), "handout/README.md's order"
    sections = re.findall(r"^### (\w+)$", HANDOUT, re.M)
    assert [s for s in sections if s in COMPONENTS] == list(COMPONENTS), "handout/README.md's ### sections"


def test_adding_a_component_exports_every_module_class_its_package_defines():
    # the exports are written out (an editor and a type checker follow an explicit import), so a
    # module file's public classes are checked against them here
    import inspect
    import pkgutil

    from cs336_basics.nn import modules

    defined = {
        name
        for file in pkgutil.iter_modules(modules.__path__)
        for name, cls in inspect.getmembers(pkgutil.resolve_name(f"{modules.__name__}.{file.name}"), inspect.isclass)
        if cls.__module__ == f"{modules.__name__}.{file.name}" and not name.startswith("_")
    }
    assert sorted(defined) == sorted(modules.__all__), "cs336_basics/nn/modules/__init__.py"


def test_adding_a_component_page_names_every_file_these_tests_check():
    page = PAGE.read_text()
    named = ["cs336_basics/__init__.py", "cs336_basics/builtin_guard.py", "cs336_basics/staff/grading.toml",
             "cs336_basics/staff/cases/", "tests/adapters.py", "tests/test_<component>.py", "handout/README.md",
             "cs336_basics/nn/modules/__init__.py"]  # fmt: skip
    assert [n for n in named if f"`{n}" not in page] == []
