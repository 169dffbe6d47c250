"""Print every case's error floor: the larger max scaled error, against the stored float64
expected output, of the reference adapter and of the same adapter on PyTorch's built-in kernels
(tests/oracles.py), both run in the case's dtype. The registry (cs336_basics/staff/cases.py)
declares these floors, rounded up; its tolerances follow from them.

    uv run python -m tests.staff.measure_floors
"""

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES
from cs336_basics.testing import scaled_error
from tests import adapters
from tests.oracles import builtin_kernels


def max_error(adapter: str, fx) -> float:
    with torch.no_grad():
        return float(scaled_error(getattr(adapters, adapter)(**fx.kwargs), fx.expected).max())


def main() -> None:
    print(f"{'case':32s} {'dtype':9s} {'ours':>9s} {'built-in':>9s} {'floor':>9s} {'declared':>9s}")
    for case in CASES:
        fx = load_fixture(case.name, case.directory)
        ours = max_error(fx.adapter, fx)
        with builtin_kernels():
            builtin = max_error(fx.adapter, fx)
        floor = max(ours, builtin if builtin != float("inf") else 0.0)  # inf: the built-in defines it otherwise
        dtype = str(case.dtype).removeprefix("torch.")
        declared = "exact" if case.floor is None else f"{case.floor:.2e}"
        print(f"{case.name:32s} {dtype:9s} {ours:9.2e} {builtin:9.2e} {floor:9.2e} {declared:>9s}")


if __name__ == "__main__":
    main()
