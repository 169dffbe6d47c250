"""cross_entropy, rung by rung: a scalar; one row's loss; the mean over rows; the same loss for
logits shifted by a constant; large logits (tests/_ladder.py). Expected values are computed here
in float64 with math, one row at a time."""

import math

import torch

from ._ladder import climb_failed, rung
from .adapters import run_cross_entropy

ROWS = torch.tensor([[2.0, -1.0, 0.5, 3.0], [0.0, 1.0, -2.0, 0.5], [1.5, 1.5, -0.5, 4.0]], dtype=torch.float64)
TARGETS = torch.tensor([1, 3, 0])


def row_loss(row: torch.Tensor, target: int) -> float:
    """log(sum(exp(row))) - row[target], in math's float64."""
    return math.log(sum(math.exp(v) for v in row.tolist())) - float(row[target])


def loss(x, t) -> float:
    out = run_cross_entropy(x, t)
    if not isinstance(out, torch.Tensor) or out.shape != ():
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        climb_failed(f"a loss of shape {shape} for inputs of shape {tuple(x.shape)}",
                     "return one number: the mean over every position (a 0-d tensor)")  # fmt: skip
    return float(out)


@rung(1)
def test_cross_entropy_returns_a_scalar():
    loss(ROWS, TARGETS)


@rung(2)
def test_cross_entropy_of_one_row_is_its_log_sum_exp_minus_the_target_logit():
    got, want = loss(ROWS[:1], TARGETS[:1]), row_loss(ROWS[0], 1)
    if abs(got - want) > 1e-12 * abs(want):
        shown = {-want: "the negative: the sign is flipped", want + float(ROWS[0, 1]) - float(ROWS[0].max()):
                 "the logit of the largest class was used instead of the target's"}  # fmt: skip
        seen = next((w for v, w in shown.items() if abs(got - v) < 1e-9), "")
        climb_failed(
            f"logits {ROWS[0].tolist()}, target 1: loss {got:.10g}, expected {want:.10g}{': ' + seen if seen else ''}",
            "-log softmax(x)[target] = log(sum_j exp(x_j)) - x[target], with the target's own logit",
        )


@rung(3)
def test_cross_entropy_averages_the_rows():
    per_row = [row_loss(r, int(t)) for r, t in zip(ROWS, TARGETS, strict=True)]
    got, want = loss(ROWS, TARGETS), sum(per_row) / 3
    if abs(got - want) > 1e-12 * want:
        seen = ": the sum over rows" if abs(got - sum(per_row)) < 1e-9 else ""
        climb_failed(
            f"three rows with losses {[round(v, 6) for v in per_row]}: loss {got:.10g}, expected their mean "
            f"{want:.10g}{seen}",
            "each row's own log-sum-exp and target (softmax over the last dimension), then the mean over rows",
        )


@rung(4)
def test_cross_entropy_ignores_a_constant_added_to_a_row():
    got, want = loss(ROWS + 1000.0, TARGETS), loss(ROWS, TARGETS)
    if not math.isfinite(got) or abs(got - want) > 1e-10 * want:
        climb_failed(
            f"logits + 1000 gave loss {got:.10g}, the same logits {want:.10g}",
            "subtract each row's max before exp (exp(1000) overflows): log(sum(exp(x - m))) - (x[t] - m)",
        )


@rung(5)
def test_cross_entropy_of_logits_of_1e4_is_finite():
    x = torch.tensor([[1e4, -1e4, 0.0], [1e4, -1e4, 0.0]], dtype=torch.float64)
    got = loss(x, torch.tensor([0, 1]))
    if got != 1e4:
        climb_failed(f"logits (1e4, -1e4, 0) with targets 0 and 1: loss {got}, expected (0 + 2e4) / 2 = 1e4",
                     "no exp of a large logit (subtract the max) and no log of a probability that rounds to 0")  # fmt: skip
