"""What a case is: a component's adapter on inputs drawn from a seed, with the measured error
floor its tolerance comes from (tol = testing.tolerance(floor, dtype); 0 for an EXACT case)."""

from dataclasses import dataclass

import torch

from cs336_basics.fixture_io import FIXTURES_DIR
from cs336_basics.staff.cases.draw import Make
from cs336_basics.testing import tolerance

F32, BF16, F16, F64 = torch.float32, torch.bfloat16, torch.float16, torch.float64
HIDDEN_FIXTURES_DIR = FIXTURES_DIR.parent / "hidden_fixtures"  # never shipped to students
I64 = torch.int64
# How far a floor measured on a CPU outside the matrix of code paths the floors are measured over
# (tests/staff/code_paths.py) may exceed the declared one before the staff invariants fail (the
# drift check, tests/staff/test_floors.py); tests/README.md says how it was chosen.
HEADROOM = 4.0
EXACT = None  # the floor of a case whose every correct answer is bit-exact (a row copy): tol = 0
EXACT_INT64 = {"floor": EXACT, "out_dtype": I64}  # an integer output (token ids, checks passed): compared exactly

B = (4, 12)  # CS336's (batch, sequence) for its snapshot tests
BIG = 1e4  # a logit or pre-activation far outside exp's float16/bfloat16 range


@dataclass(frozen=True)
class Case:
    name: str
    component: str
    adapter: str  # the run_* function of tests/adapters.py
    seed: int
    make: Make  # rng -> the adapter's keyword arguments, float32
    floor: float | None  # measured; EXACT (None) for tolerance 0
    dtype: torch.dtype = F32  # the inputs' (and, unless out_dtype says otherwise, the output's) dtype
    hidden: bool = False
    out_dtype: torch.dtype | None = None  # the output's dtype when it is not `dtype` (token ids: int64)

    @property
    def output_dtype(self) -> torch.dtype:
        return self.dtype if self.out_dtype is None else self.out_dtype

    @property
    def tol(self) -> float:
        return 0.0 if self.floor is EXACT else tolerance(self.floor, self.dtype)

    @property
    def directory(self):
        return HIDDEN_FIXTURES_DIR if self.hidden else FIXTURES_DIR
