"""The floors tolerances come from cover what they are measured from, within HEADROOM: declared
floors cover the matrix of code paths this machine reaches (tests/staff/code_paths.py, recorded in
floor_matrix.json), and a measurement here fails only beyond HEADROOM x the declared floor, not
when its last digit moves on a CPU outside the matrix. The registry's graded cases: the reference
and the built-in on the stored inputs. tests/floors.py, the one place the ungraded comparisons'
floors are written: every entry is measured by one measure_floors() of MEASURED_BY and used by a
test, and nothing else in tests/ derives a tolerance of those comparisons."""

import json
from pathlib import Path

import pytest
import torch

from cs336_basics.staff.cases import CASES, HEADROOM
from tests.floors import FLOORS, GRADIENT, KERNEL_DTYPES, KERNEL_TABLES, MaxErrors, kernel_floor_name
from tests.staff.measure_floors import (
    MEASURED_BY,
    RECORD,
    declared,
    graded_floor,
    measure_graded,
    measure_ungraded,
    merged_record,
)

TESTS = Path(__file__).resolve().parents[1]


def test_floors_every_graded_case_declares_what_the_reference_and_the_builtin_measure_within_headroom():
    measured = {name: graded_floor(*errors) for name, errors in measure_graded().items()}
    below = {c.name: (c.floor, measured[c.name]) for c in CASES if measured[c.name] > HEADROOM * (c.floor or 0.0)}
    assert below == {}, (
        f"HEADROOM ({HEADROOM:g}) x declared floor < measured: measure the matrix "
        "(uv run python -m tests.staff.measure_floors --graded --matrix) and declare its maximum"
    )


def test_floors_every_entry_is_measured_and_one_seed_stays_within_it():
    measured = measure_ungraded(seeds=range(1))
    assert sorted(measured) == sorted(FLOORS)
    above = {name: err for name, err in measured.items() if err > HEADROOM * FLOORS[name].value}
    assert above == {}, f"HEADROOM ({HEADROOM:g}) x declared floor < measured (measure_floors --ungraded --matrix)"


def _recorded() -> dict:
    return json.loads(RECORD.read_text())


def test_floors_every_declared_floor_covers_the_recorded_matrix_maximum():
    """The matrix of code paths (measure_floors --matrix --record) measured every comparison, and
    each declared floor is at least its maximum there."""
    recorded = _recorded()
    for kind, floors in declared().items():
        assert sorted(recorded[kind]) == sorted(floors), f"{kind}: measure the matrix again (--matrix --record)"
        below = {n: (floors[n], recorded[kind][n][:2]) for n in floors if recorded[kind][n][0] > floors[n]}
        assert below == {}, f"{kind}: declared floor < the matrix maximum (at the code path named)"


def test_floors_headroom_covers_the_largest_surprise_the_matrix_measured():
    """HEADROOM is at least the largest factor by which one switch of the matrix raised a
    measurement over the same path with that switch set otherwise (tests/README.md)."""
    recorded = _recorded()
    worst = max(v[2] for kind in ("graded", "ungraded") for v in recorded[kind].values())
    assert 1.0 < worst <= HEADROOM
    readme = (TESTS / "README.md").read_text()
    assert f"HEADROOM = {HEADROOM:g}" in readme and f"was {worst:.1f} (" in readme, (
        f"tests/README.md states HEADROOM = {HEADROOM:g} and the largest surprise: {worst:.1f}"
    )


def test_floors_every_entry_is_used_by_a_test():
    # a kernel table's cells by their table: kernel_tol("<kind>", ...), tol(f"{name}.grad")
    sources = "\n".join(p.read_text() for p in TESTS.rglob("test_*.py"))
    used = {kernel_floor_name(kind, k, dtype) for kind, table in KERNEL_TABLES.items() for k in table
            for dtype in KERNEL_DTYPES if f'kernel_tol("{kind}"' in sources}  # fmt: skip
    used |= {f"{k}.grad" for k in GRADIENT if 'tol(f"{name}.grad")' in sources}
    assert [name for name in FLOORS if f'"{name}"' not in sources and name not in used] == []


def test_floors_measuring_modules_have_no_main_block():
    """Measured by the one script, not by a `python -m tests.test_<component>` of their own."""
    paths = [TESTS.parent / (name.replace(".", "/") + ".py") for name in MEASURED_BY]
    assert [p.name for p in paths if "__main__" in p.read_text()] == []


def test_floors_max_errors_refuses_a_name_not_declared():
    with pytest.raises(KeyError, match="'attention.f16'"):
        MaxErrors().keep("attention.f16", torch.zeros(1), torch.zeros(1))


HERE = {"cpu": "a CPU", "torch": "2.x"}
PATHS = ["default/-/-/1t", "avx2/-/-/1t"]  # two paths one switch apart: capability


def _partial() -> dict[str, dict]:
    """A matrix of PATHS that measured "smollm2.hf" and "parallel.adapters" alone."""
    cells = {"smollm2.hf": (2e-6, 4e-6), "parallel.adapters": (2e-7, 1e-7)}
    return {path: {"graded": {}, "ungraded": {n: v[i] for n, v in cells.items()}} for i, path in enumerate(PATHS)}


def test_floors_merge_replaces_or_adds_only_the_comparisons_a_partial_matrix_measured():
    recorded = {**HERE, "paths": PATHS, "graded": {"a_case": [1e-7, PATHS[0], 1.5, "MKL=AVX2"]},
                "ungraded": {"gelu.f64": [5e-16, PATHS[1], 1.2, "threads=1t"], "smollm2.hf": [1.0, PATHS[0], 9.0, "x"]}}  # fmt: skip
    merged = merged_record(recorded, _partial(), HERE)
    assert merged == {**HERE, "paths": PATHS, "graded": recorded["graded"], "ungraded": {
        "gelu.f64": [5e-16, PATHS[1], 1.2, "threads=1t"],  # kept
        "smollm2.hf": [4e-6, PATHS[1], 2.0, "capability=avx2"],  # replaced, its surprise recomputed
        "parallel.adapters": [2e-7, PATHS[0], 2.0, "capability=default"],  # added
    }}  # fmt: skip
    assert recorded["ungraded"]["smollm2.hf"][0] == 1.0  # the record read is not changed in place


@pytest.mark.parametrize(
    "here, partial, error",
    [
        ({"cpu": "a CPU", "torch": "2.y"}, _partial(), "recorded on"),  # another PyTorch
        (HERE, {PATHS[0]: _partial()[PATHS[0]]}, "paths"),  # one path of two
        (HERE, _partial() | {PATHS[1]: {"graded": {}, "ungraded": {"smollm2.hf": 4e-6}}}, "different comparisons"),
    ],
    ids=["torch", "paths", "cells"],
)
def test_floors_merge_refuses_a_partial_matrix_of_another_machine_or_other_paths_or_cells(here, partial, error):
    recorded = {**HERE, "paths": PATHS, "graded": {}, "ungraded": {}}
    with pytest.raises(ValueError, match=error):
        merged_record(recorded, partial, here)
