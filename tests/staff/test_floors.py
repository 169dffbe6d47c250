"""The floors tolerances come from cover what they are measured from. The registry's graded cases:
the reference and the built-in on the stored inputs. tests/floors.py, the one place the ungraded
comparisons' floors are written: every entry is measured by one measure_floors() of MEASURED_BY and
used by a test, and nothing else in tests/ derives a tolerance of those comparisons."""

from pathlib import Path

import pytest
import torch

from cs336_basics.staff.cases import CASES
from tests.floors import FLOORS, MaxErrors
from tests.staff.measure_floors import MEASURED_BY, graded_floor, measure_graded, measure_ungraded

TESTS = Path(__file__).resolve().parents[1]


def test_floors_every_graded_case_declares_at_least_what_the_reference_and_the_builtin_measure():
    measured = {name: graded_floor(*errors) for name, errors in measure_graded().items()}
    below = {c.name: (c.floor, measured[c.name]) for c in CASES if measured[c.name] > (c.floor or 0.0)}
    assert below == {}, "declared floor < measured (uv run python -m tests.staff.measure_floors --graded)"


def test_floors_every_entry_is_measured_and_one_seed_stays_within_it():
    measured = measure_ungraded(seeds=range(1))
    assert sorted(measured) == sorted(FLOORS)
    assert {name: err for name, err in measured.items() if err > FLOORS[name].value} == {}


def test_floors_every_entry_is_used_by_a_test():
    sources = "\n".join(p.read_text() for p in TESTS.rglob("test_*.py"))
    assert [name for name in FLOORS if f'"{name}"' not in sources] == []


def test_floors_measuring_modules_have_no_main_block():
    """Measured by the one script, not by a `python -m tests.test_<component>` of their own."""
    paths = [TESTS.parent / (name.replace(".", "/") + ".py") for name in MEASURED_BY]
    assert [p.name for p in paths if "__main__" in p.read_text()] == []


def test_floors_max_errors_refuses_a_name_not_declared():
    with pytest.raises(KeyError, match="'attention.f16'"):
        MaxErrors().keep("attention.f16", torch.zeros(1), torch.zeros(1))
