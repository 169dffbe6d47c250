"""Public cases graded on fresh inputs: the shipped fixtures are known to students, so a public
case is graded on inputs drawn now from the same case definition (shapes, dtype, scales and
witness values; cs336_basics/staff/cases/) with a seed the student never sees, and judged
against the reference's float64 output, computed here in the grader (never in a worker).

A draw is drawn again if the reference itself, run in the case's dtype, misses the case's
tolerance (the floor was measured on the stored inputs), or if the trivial answer (zeros of the
expected shape) passes it while it fails the stored fixture: a model whose logits are all equal
generates token 0 each time, and a small random model sometimes does too. After a few such
draws the stored fixture is used, and the grader says so in its notes.
"""

import secrets

import numpy as np
import torch

from cs336_basics.fixture_io import Fixture
from cs336_basics.staff.cases import BY_NAME
from cs336_basics.staff.grader import single_process
from cs336_basics.staff.reference import adapters, expected_output, map_tensors
from cs336_basics.testing import compare

ATTEMPTS = 4


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


def fresh_fixture(stored: Fixture, seed: int) -> Fixture | None:
    """A fixture like `stored` on inputs drawn from `seed`; None if the reference misses it, or if
    zeros pass it where they fail `stored`."""
    inputs = _draw(stored.name, seed)
    expected = _reference(stored.adapter, inputs, stored, float64=True)
    if _passes_zeros(expected, stored) and not _passes_zeros(stored.expected, stored):
        return None
    ours = _reference(stored.adapter, inputs, stored, float64=False)
    if not compare(ours, expected, stored.tol, out_dtype=stored.out_dtype).ok:
        return None
    return Fixture(stored.name, stored.component, stored.adapter, inputs, expected, stored.out_dtype, stored.tol)


def fresh_public_fixtures(
    fixtures: dict[str, Fixture], public: list[str], notes: list[str], rng: secrets.SystemRandom | None = None
) -> dict[str, Fixture]:
    """`fixtures` with every public case's inputs and expected output drawn anew."""
    rng = rng or secrets.SystemRandom()
    out = dict(fixtures)
    for name in public:
        for _ in range(ATTEMPTS):
            fresh = fresh_fixture(fixtures[name], rng.getrandbits(63))
            if fresh is not None:
                out[name] = fresh
                break
        else:
            notes.append(
                f"public case {name}: the reference missed its tolerance on {ATTEMPTS} fresh draws; "
                "graded on the stored fixture"
            )
    return out
