"""Staff only: the grader's fresh draws of public cases (grader/fresh.py) reject the trivial answer
(zeros) whenever the stored fixture does: a model whose logits are all equal generates token 0
each time, and a small random reference model sometimes generates only 0s too. And a kept draw
lies within the floor measured over draws, so a correct formula rounded otherwise than the
reference stays within the tolerance on it."""

import random

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.grader import fresh
from cs336_basics.testing import compare, scaled_error

STORED = load_fixture("generate_until_context_full")  # four generated ids, not all 0


ONLY_ZEROS_SEED = 10008  # the reference generates 0, 0, 0, 0 on this draw


def test_grader_fresh_zeros_fail_the_stored_fixture():
    assert not fresh._passes_zeros(STORED.expected, STORED)


def test_grader_fresh_draw_that_zeros_pass_is_drawn_again():
    inputs = fresh._draw(STORED.name, ONLY_ZEROS_SEED)
    assert not fresh.expected_output("run_generate", inputs).any()
    assert fresh.fresh_fixture(STORED, seed=ONLY_ZEROS_SEED) is None


def test_grader_fresh_draw_that_zeros_fail_is_kept():
    drawn = fresh.fresh_fixture(STORED, seed=ONLY_ZEROS_SEED + 1)
    assert drawn is not None and not fresh._passes_zeros(drawn.expected, drawn)


def test_grader_fresh_draw_that_zeros_pass_is_kept_when_they_pass_the_stored_fixture():
    zeros = fresh.Fixture(**{**vars(STORED), "expected": torch.zeros_like(STORED.expected)})
    assert fresh._passes_zeros(zeros.expected, zeros)
    assert fresh.fresh_fixture(zeros, seed=ONLY_ZEROS_SEED) is not None


def test_grader_fresh_draws_of_every_public_case_reject_zeros_where_the_stored_fixture_does():
    from cs336_basics.staff.cases import PUBLIC_CASES

    for case in PUBLIC_CASES:
        stored = load_fixture(case.name)
        drawn = fresh.first_kept_draw(stored, random.Random(20261126))
        if drawn is not None and not fresh._passes_zeros(stored.expected, stored):
            assert not fresh._passes_zeros(drawn.expected, drawn), case.name


class _SoftmaxWithItsJacobianProduct(torch.autograd.Function):
    """An honest softmax (tests/staff/honest/softmax_autograd_function): y = exp(x - max) / sum, and
    the backward written out as y * (g - <g, y>), rounded otherwise than the reference's autograd."""

    @staticmethod
    def forward(ctx, x, dim):
        exps = (x - x.amax(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).min)).exp()
        y = exps / exps.sum(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).tiny)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(dim=ctx.dim, keepdim=True)), None


# Draws on which, while floors were measured on the stored inputs alone, the reference kept the draw
# (its error under the tolerance) and the backward above missed the tolerance: an honest submission
# lost points at random.
SOFTMAX_BACKWARD_SEEDS = (108, 302, 530, 774, 1018, 1159, 1191, 1434, 1713, 2204, 2243, 2278, 2487, 2675)


def test_grader_fresh_draw_keeps_an_honest_softmax_backward_within_the_tolerance():
    stored = load_fixture("softmax_backward_masked")
    kept = [fresh.fresh_fixture(stored, seed) for seed in SOFTMAX_BACKWARD_SEEDS]
    missed = []
    for drawn in [d for d in kept if d is not None]:
        x = drawn.kwargs["in_features"].clone().requires_grad_()
        _SoftmaxWithItsJacobianProduct.apply(x, drawn.kwargs["dim"]).backward(drawn.kwargs["grad_output"])
        if not compare(x.grad, drawn.expected, drawn.tol, out_dtype=drawn.out_dtype).ok:
            missed.append(float(scaled_error(x.grad, drawn.expected).max()))
    assert missed == [] and any(d is not None for d in kept), f"tolerance {stored.tol:.1e}, errors {missed}"
