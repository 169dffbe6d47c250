"""Public cases graded on fresh inputs: the shipped fixtures are known to students, so a public
case is graded on inputs drawn now from the same case definition (shapes, dtype, scales and
witness values; cs336_basics/staff/cases.py) with a seed the student never sees, and judged
against the reference's float64 output, computed here in the grader (never in a worker).

A draw on which the reference itself, run in the case's dtype, misses the case's tolerance
(the floor was measured on the stored inputs) is drawn again; after a few such draws the
stored fixture is used, and the grader says so in its notes.
"""

import secrets

import numpy as np
import torch

from cs336_basics.fixture_io import Fixture
from cs336_basics.staff.cases import BY_NAME
from cs336_basics.staff.reference import adapters, expected_output, map_tensors
from cs336_basics.testing import compare

ATTEMPTS = 4
# Components whose public cases are graded on the stored fixtures: their reference starts process
# groups, which the grader does not do in its own (multi-threaded) process.
STORED_ONLY = {"parallel"}


def _draw(name: str, seed: int) -> dict:
    case = BY_NAME[name]
    kwargs = case.make(np.random.default_rng(seed))
    return map_tensors(kwargs, lambda t: t.to(case.dtype) if t.is_floating_point() else t)


def fresh_fixture(stored: Fixture, seed: int) -> Fixture | None:
    """A fixture like `stored` on inputs drawn from `seed`; None if the reference misses it."""
    inputs = _draw(stored.name, seed)
    expected = expected_output(stored.adapter, inputs)
    with torch.no_grad():
        ours = getattr(adapters(), stored.adapter)(**inputs)
    if not compare(ours, expected, stored.tol, out_dtype=stored.out_dtype).ok:
        return None
    return Fixture(stored.name, stored.component, stored.adapter, inputs, expected, stored.out_dtype, stored.tol)


def fresh_public_fixtures(fixtures: dict[str, Fixture], public: list[str], notes: list[str],
                          rng: secrets.SystemRandom | None = None) -> dict[str, Fixture]:
    """`fixtures` with every public case's inputs and expected output drawn anew."""
    rng = rng or secrets.SystemRandom()
    out = dict(fixtures)
    for name in public:
        if fixtures[name].component in STORED_ONLY:
            continue
        for _ in range(ATTEMPTS):
            fresh = fresh_fixture(fixtures[name], rng.getrandbits(63))
            if fresh is not None:
                out[name] = fresh
                break
        else:
            notes.append(f"public case {name}: the reference missed its tolerance on {ATTEMPTS} fresh draws; "
                         "graded on the stored fixture")
    return out
