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
from cs336_basics.staff.reference import adapters, expected_output, map_tensors
from cs336_basics.testing import compare

ATTEMPTS = 4


def _linear(kw: dict) -> tuple[str, dict]:
    return "run_linear", {k: kw[k] for k in ("d_in", "d_out", "weights", "in_features")}


# The tensor-parallel adapters start process groups, which the grader does not do in its own
# (multi-threaded) process. What they compute is a single-process computation split over ranks
# (the gathered output of a column- or row-parallel linear is the linear's; the split FFN is
# the FFN; the attention split by head is the attention, the model the model): their expected outputs and the reference's own check come from that computation.
SINGLE_PROCESS = {
    "run_column_parallel_linear": _linear,
    "run_row_parallel_linear": _linear,
    "run_parallel_swiglu": lambda kw: ("run_swiglu", {k: v for k, v in kw.items() if k != "world_size"}),
    "run_parallel_attention": lambda kw: (
        "run_multihead_self_attention_with_rope",
        {k: v for k, v in kw.items() if k != "world_size"},
    ),
    "run_parallel_transformer_lm": lambda kw: (
        "run_transformer_lm",
        {k: v for k, v in kw.items() if k != "world_size"},
    ),
}


def _single_process(adapter: str, inputs: dict) -> tuple[str, dict]:
    return SINGLE_PROCESS[adapter](inputs) if adapter in SINGLE_PROCESS else (adapter, inputs)


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
    adapter, args = _single_process(stored.adapter, inputs)
    expected = expected_output(adapter, args)
    if _passes_zeros(expected, stored) and not _passes_zeros(stored.expected, stored):
        return None
    with torch.no_grad():
        ours = getattr(adapters(), adapter)(**args)
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
