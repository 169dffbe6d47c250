"""Measure every floor the tests' tolerances come from, and print it beside the declared one.

Graded cases (cs336_basics/staff/cases/): per case, the larger max scaled error, against the
stored float64 expected output, of the reference adapter and of the same adapter on PyTorch's
built-in kernels (tests/oracles.py), both run in the case's dtype. The registry declares these
floors, rounded up; its tolerances follow from them.

Ungraded comparisons (tests/floors.py): each test module in MEASURED_BY measures its own
comparisons over its seeds (`measure_floors()`), once with the reference and once with each
accepted variant of its component (cs336_basics/staff/mistakes: every exact way of writing the
formula the catalogue knows); FLOORS declares the largest, rounded up.

Declared floors are the larger of the measurements on an x86-64 CPU and with PyTorch's generic
kernels (ATEN_CPU_CAPABILITY=default); run it both ways:

    uv run python -m tests.staff.measure_floors [--graded | --ungraded]
    ATEN_CPU_CAPABILITY=default uv run python -m tests.staff.measure_floors [--graded | --ungraded]
"""

import argparse
import contextlib
import importlib
import math

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES
from cs336_basics.staff.mistakes import VARIANTS
from cs336_basics.testing import scaled_error
from tests import adapters
from tests.floors import FLOORS
from tests.oracles import builtin_kernels

# The modules whose measure_floors() measure the entries of tests/floors.py, in COMPONENTS order.
MEASURED_BY = (
    "tests.staff.test_hf_oracles",
    "tests.staff.test_hf_llama",
    "tests.test_gelu",
    "tests.test_attention",
    "tests.test_rope",
    "tests.test_mha",
    "tests.test_block",
    "tests.test_lm",
    "tests.test_cross_entropy",
    "tests.test_parallel_layers",
)


def max_error(adapter: str, fx) -> float:
    with torch.no_grad():
        return float(scaled_error(getattr(adapters, adapter)(**fx.kwargs), fx.expected).max())


def measure_graded(cases=CASES) -> dict[str, tuple[float, float]]:
    """{case name: (the reference's max scaled error, the built-in's)} on the stored inputs."""
    measured = {}
    for case in cases:
        fx = load_fixture(case.name, case.directory)
        ours = max_error(fx.adapter, fx)
        with builtin_kernels():
            builtin = max_error(fx.adapter, fx)
        measured[case.name] = ours, builtin
    return measured


def graded_floor(ours: float, builtin: float) -> float:
    return max(ours, builtin if builtin != float("inf") else 0.0)  # inf: the built-in defines it otherwise


def graded() -> None:
    print(f"{'case':32s} {'dtype':9s} {'ours':>9s} {'built-in':>9s} {'floor':>9s} {'declared':>9s}")
    measured = measure_graded()
    for case in CASES:
        ours, builtin = measured[case.name]
        dtype = str(case.dtype).removeprefix("torch.")
        declared = "exact" if case.floor is None else f"{case.floor:.2e}"
        print(
            f"{case.name:32s} {dtype:9s} {ours:9.2e} {builtin:9.2e} {graded_floor(ours, builtin):9.2e} {declared:>9s}"
        )


def forms_of(module_name: str) -> list:
    """The reference (a null context) and the accepted variants of the component a test module
    is named after (tests.test_<component>); the reference alone for other modules."""
    component = module_name.rsplit(".", 1)[-1].removeprefix("test_")
    return [contextlib.nullcontext()] + [v.applied() for v in VARIANTS if v.component == component]


def measure_ungraded(seeds: range | None = None) -> dict[str, float]:
    """{FLOORS name: measured floor}, the largest over the reference and the accepted variants,
    from every module in MEASURED_BY (over its own seeds, or `seeds`)."""
    measured: dict[str, float] = {}
    for name in MEASURED_BY:
        measure = importlib.import_module(name).measure_floors
        for form in forms_of(name):
            with form:
                got = measure() if seeds is None else measure(seeds)
            measured |= {k: max(v, measured.get(k, 0.0)) for k, v in got.items()}
    return measured


def round_up(x: float, digits: int = 2) -> float:
    """x rounded up to `digits` significant digits (4.31e-16 -> 4.4e-16): how floors are declared."""
    if x <= 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(round(x / step, 9)) * step


def ungraded() -> None:
    measured = measure_ungraded()
    print(f"{'comparison':32s} {'dtype':9s} {'measured':>11s} {'rounded up':>10s} {'declared':>9s}  note")
    for name, floor in FLOORS.items():
        got = measured.get(name)
        dtype = str(floor.dtype).removeprefix("torch.")
        note = "not measured" if got is None else ("ABOVE THE DECLARED FLOOR" if got > floor.value else "")
        shown = ("-", "-") if got is None else (f"{got:.4e}", f"{round_up(got):.1e}")
        print(f"{name:32s} {dtype:9s} {shown[0]:>11s} {shown[1]:>10s} {floor.value:9.2e}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--graded", action="store_true", help="only the registry's cases")
    which.add_argument("--ungraded", action="store_true", help="only tests/floors.py's comparisons")
    args = parser.parse_args()
    if not args.ungraded:
        graded()
    if not args.graded:
        ungraded()


if __name__ == "__main__":
    main()
