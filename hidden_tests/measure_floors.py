"""Print each hidden case's error floor: the larger max scaled error, against the stored expected
output, of our adapter (tests/adapters.py) and the PyTorch built-in oracle (tests/oracles.py),
both run in the case's dtype. Run: `uv run python -m hidden_tests.measure_floors`."""

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.hidden_cases import HIDDEN_CASES
from cs336_basics.staff.make_fixtures import HIDDEN_FIXTURES_DIR
from cs336_basics.testing import scaled_error
from tests import adapters
from tests.oracles import ORACLES


def main() -> None:
    for case in HIDDEN_CASES:
        fx = load_fixture(case.name, HIDDEN_FIXTURES_DIR)
        with torch.no_grad():
            ours = float(scaled_error(getattr(adapters, fx.adapter)(**fx.kwargs), fx.expected).max())
            oracle = float(scaled_error(ORACLES[fx.adapter](**fx.kwargs), fx.expected).max())
        dtype = str(case.dtype).removeprefix("torch.")
        print(f"{case.name:30s} {dtype:9s} ours {ours:.2e}  oracle {oracle:.2e}  floor {max(ours, oracle):.2e}")


if __name__ == "__main__":
    main()
