"""Public cases graded on fresh inputs: the shipped fixtures are known to students, so a public
case is graded on inputs drawn now from the same case definition (shapes, dtype, scales and
witness values; cs336_basics/staff/cases/) with a seed the student never sees, and judged
against the reference's float64 output, computed here in the grader (never in a worker).

A public case's floor is measured on its stored inputs and on DRAWS draws of its definition
(tests/staff/measure_floors.py), so its tolerance, MARGIN x the floor, covers every correct way
of writing the formula on those draws, not only on the stored one. A draw is drawn again if the
reference itself, run in the case's dtype, is further from the truth than that floor (a draw
outside those measured: a correct formula written otherwise could miss the tolerance there), or
if the trivial answer (zeros of the expected shape) passes it while it fails the stored fixture:
a model whose logits are all equal generates token 0 each time, and a small random model
sometimes does too. After a few such draws the stored fixture is used, and the grader says so in
its notes.
"""

import random
import secrets

import numpy as np
import torch

from cs336_basics.fixture_io import Fixture
from cs336_basics.staff.cases import BY_NAME
from cs336_basics.staff.grader import single_process
from cs336_basics.staff.reference import adapters, expected_output, map_tensors
from cs336_basics.testing import compare

ATTEMPTS = 8
DRAWS = range(1, 17)  # the seeds a public case's floor is measured on besides its own


def _reference(adapter: str, args: dict, stored: Fixture, float64: bool) -> torch.Tensor:
    """The reference's output of the case on `args`, upcast to float64 (the truth) or in the case's
    dtype (its own check), computed in this process (single_process: no process group here)."""
    if adapter in single_process.COLLECTIVES:  # counts of the module's collectives, not of the values
        return stored.expected if float64 else stored.expected.to(stored.out_dtype)
    if adapter in single_process.BACKWARD:
        upcast = map_tensors(args, lambda t: t.double() if t.is_floating_point() else t) if float64 else args
        return single_process.gradients(adapter, upcast).detach()
    adapter, args = single_process.FORWARD[adapter](args) if adapter in single_process.FORWARD else (adapter, args)
    if float64:
        return expected_output(adapter, args)
    with torch.no_grad():
        return getattr(adapters(), adapter)(**args)


def _draw(name: str, seed: int) -> dict:
    case = BY_NAME[name]
    kwargs = case.make(np.random.default_rng(seed))
    return map_tensors(kwargs, lambda t: t.to(case.dtype) if t.is_floating_point() else t)


def _passes_zeros(expected: torch.Tensor, fx: Fixture) -> bool:
    """Whether the trivial answer, zeros of expected's shape, is within fx's tolerance of expected."""
    zeros = torch.zeros(expected.shape, dtype=fx.out_dtype)
    return compare(zeros, expected, fx.tol, out_dtype=fx.out_dtype).ok


def drawn_fixture(stored: Fixture, seed: int) -> Fixture:
    """A fixture like `stored` on inputs drawn from `seed`, with the reference's float64 output on them."""
    inputs = _draw(stored.name, seed)
    expected = _reference(stored.adapter, inputs, stored, float64=True)
    return Fixture(stored.name, stored.component, stored.adapter, inputs, expected, stored.out_dtype, stored.tol)


def fresh_fixture(stored: Fixture, seed: int) -> Fixture | None:
    """drawn_fixture(stored, seed); None if the reference's error on it exceeds the case's floor,
    or if zeros pass it where they fail `stored`."""
    drawn = drawn_fixture(stored, seed)
    if _passes_zeros(drawn.expected, stored) and not _passes_zeros(stored.expected, stored):
        return None
    ours = _reference(stored.adapter, drawn.kwargs, stored, float64=False)
    if not compare(ours, drawn.expected, BY_NAME[stored.name].floor or 0.0, out_dtype=stored.out_dtype).ok:
        return None
    return drawn


def first_kept_draw(stored: Fixture, rng: random.Random) -> Fixture | None:
    """The first of ATTEMPTS draws (seeds from rng) that fresh_fixture keeps; None if it keeps none."""
    for _ in range(ATTEMPTS):
        drawn = fresh_fixture(stored, rng.getrandbits(63))
        if drawn is not None:
            return drawn
    return None


def fresh_public_fixtures(
    fixtures: dict[str, Fixture], public: list[str], notes: list[str], rng: random.Random | None = None
) -> dict[str, Fixture]:
    """`fixtures` with every public case's inputs and expected output drawn anew."""
    rng = rng or secrets.SystemRandom()
    out = dict(fixtures)
    for name in public:
        drawn = first_kept_draw(fixtures[name], rng)
        if drawn is not None:
            out[name] = drawn
        else:
            notes.append(
                f"public case {name}: the reference missed its floor on {ATTEMPTS} fresh draws; "
                "graded on the stored fixture"
            )
    return out
