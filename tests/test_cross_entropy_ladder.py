"""cross_entropy, rung by rung: a scalar; one row's loss; the mean over rows; any leading
dimensions; the same loss for logits shifted by a constant; large logits (tests/_ladder.py).
Expected values are computed here in float64 with math, one row at a time. When a rung fails,
probes of the same kind (a shifted row, another target, equal rows) say which term is off."""

import math

import torch

from ._helpers import raised
from ._ladder import climb_failed, rung
from .adapters import run_cross_entropy

ROWS = torch.tensor([[2.0, -1.0, 0.5, 3.0], [0.0, 1.0, -2.0, 0.5], [1.5, 1.5, -0.5, 4.0]], dtype=torch.float64)
TARGETS = torch.tensor([1, 3, 0])


def lse(row: torch.Tensor) -> float:
    return math.log(sum(math.exp(v) for v in row.tolist()))


def row_loss(row: torch.Tensor, target: int) -> float:
    """log(sum(exp(row))) - row[target], in math's float64."""
    return lse(row) - float(row[target])


def aligned(lead: tuple[int, ...]) -> str:
    """Where to look when the per-position terms of logits with leading shape `lead` do not line up."""
    return (f"every per-position term has one shape, {lead} (or {lead + (1,)} throughout): reduce over the classes "
            "with dim=-1 (keepdim=True keeps the 1) and squeeze(-1) what gather returns")  # fmt: skip


def loss(x, t) -> float:
    try:
        out, error = run_cross_entropy(x, t), None
    except Exception as caught:  # noqa: BLE001 - the rung reports it with the shapes' meaning
        error = caught
    if error is not None:
        lead = tuple(x.shape[:-1])
        climb_failed(f"logits of shape {tuple(x.shape)} ({' x '.join(map(str, lead))} positions, {x.shape[-1]} "
                     f"classes): {raised(error)}", aligned(lead))  # fmt: skip
    if not isinstance(out, torch.Tensor) or out.shape != ():
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        climb_failed(f"a loss of shape {shape} for inputs of shape {tuple(x.shape)}",
                     "return one number: the mean over every position (a 0-d tensor)")  # fmt: skip
    return float(out)


def one(row: torch.Tensor, target: int) -> float:
    return loss(row[None], torch.tensor([target]))


@rung(1)
def test_cross_entropy_returns_a_scalar():
    loss(ROWS, TARGETS)


@rung(2)
def test_cross_entropy_of_one_row_is_its_log_sum_exp_minus_the_target_logit():
    x, got, want = ROWS[0], one(ROWS[0], 1), row_loss(ROWS[0], 1)
    if abs(got - want) > 1e-12 * abs(want):
        seen, look_at = _what_one_row_shows(x, got)
        climb_failed(f"logits {x.tolist()}, target 1: loss {got:.10g}, expected {want:.10g}: {seen}", look_at)


def _what_one_row_shows(x: torch.Tensor, got: float) -> tuple[str, str]:
    """Which term of log(sum_j exp(x_j)) - x[target] is off, from probes on the same row."""
    if abs(got + row_loss(x, 1)) < 1e-9:
        return "the negative: the sign is flipped", "the loss is -log softmax(x)[target] = log(sum_j exp(x_j)) - x[t]"
    if abs(one(2 * x + 1, 1) - got) < 1e-12 and abs(one(x.flip(0), 1) - got) < 1e-12:
        equal = " = log(4), the loss of equal logits," if abs(got - math.log(4)) < 1e-9 else ""
        return (f"the loss is {got:.6g}{equal} for other logits too: the logits cancel out",
                "the dimension of every reduction (the max, the sum of exps): a row's classes, dim=-1; over a "
                "dimension of size 1 (this one row's batch) each logit cancels itself")  # fmt: skip
    shift = one(x + 5, 1) - got
    if abs(shift) > 1e-9:
        return (f"adding 5 to every logit changed the loss by {shift:+.6g}; log(sum exp(x + 5)) - (x[t] + 5) "
                "does not change", "a shift (such as the row's max) comes off both the log-sum-exp and the "
                "target's logit, or off neither")  # fmt: skip
    moved, want_moved = one(x, 3) - got, float(x[1] - x[3])
    if abs(moved - want_moved) > 1e-9:
        return (f"moving the target from 1 to 3 changed the loss by {moved:.6g}, expected x[1] - x[3] = "
                f"{want_moved:g}: the target's term is not -x[target]", "the target's logit x[row, target]")  # fmt: skip
    return _what_the_normalizer_is(x, got + float(x[1]))


def _what_the_normalizer_is(x: torch.Tensor, normalizer: float) -> tuple[str, str]:
    """loss + x[target] against log(sum_j exp(x_j)), and the simple forms it equals."""
    m, exps = float(x.max()), [math.exp(v) for v in x.tolist()]
    forms = {
        sum(exps): "sum_j exp(x_j), without its log",
        m + sum(e / math.exp(m) for e in exps): "max + sum_j exp(x_j - max), without the log",
        lse(x) - math.log(len(exps)): "log of the mean of exp(x), not of the sum",
        m: "the max alone",
    }
    shown = next((f" = {w}" for v, w in forms.items() if abs(normalizer - v) < 1e-9), "")
    return (f"loss + x[target] = {normalizer:.6g}{shown}, expected log(sum_j exp(x_j)) = {lse(x):.6g}",
            "the part without the target: log(sum_j exp(x_j)), as max + log(sum_j exp(x_j - max))")  # fmt: skip


@rung(3)
def test_cross_entropy_averages_the_rows():
    per_row = [row_loss(r, int(t)) for r, t in zip(ROWS, TARGETS, strict=True)]
    got, want = loss(ROWS, TARGETS), sum(per_row) / 3
    if abs(got - want) > 1e-12 * want:
        seen, look_at = _what_the_rows_show(got, per_row)
        climb_failed(f"three rows with losses {[round(v, 6) for v in per_row]}: loss {got:.10g}, expected their "
                     f"mean {want:.10g}: {seen}", look_at)  # fmt: skip


def _what_the_rows_show(got: float, per_row: list[float]) -> tuple[str, str]:
    """Whether the rows' sum, a row alone, rows sharing a target or one row repeated goes wrong."""
    if abs(got - sum(per_row)) < 1e-9:
        return "the sum over rows", "the mean over every position, not the sum"
    alone = [one(r, int(t)) for r, t in zip(ROWS, TARGETS, strict=True)]
    if any(abs(a - p) > 1e-9 for a, p in zip(alone, per_row, strict=True)):
        return f"each row alone gives {[round(a, 6) for a in alone]}", "the formula for one row, on every row"
    shared = loss(ROWS, torch.tensor([1, 1, 1]))
    if abs(shared - sum(row_loss(r, 1) for r in ROWS) / 3) > 1e-9:
        return (f"with one target (1) for the three rows the loss is {shared:.6g}, not their mean: a row's "
                "log-sum-exp takes in other rows' logits", "the log-sum-exp over each row's own classes: dim=-1")  # fmt: skip
    repeated = loss(ROWS[:1].expand(3, -1), TARGETS)
    if abs(repeated - sum(row_loss(ROWS[0], int(t)) for t in TARGETS) / 3) > 1e-9:
        return (f"one row repeated with targets {TARGETS.tolist()} gives {repeated:.6g}, not the mean: the "
                "target logits are not each row's own", "x[i, targets[i]] for each row i")  # fmt: skip
    return ("equal rows, or equal targets, give the right mean; different rows with different targets do not: a "
            "row's loss uses another row's target", "one logit per row, x[i, targets[i]] (gather along dim=-1 or "
            "x[arange(n), targets]), not every target in every row (x[:, targets])")  # fmt: skip


@rung(4)
def test_cross_entropy_treats_every_leading_dimension_as_positions():
    x = torch.stack([ROWS, ROWS.flip(0) - 1.0])
    t = torch.stack([TARGETS, TARGETS.flip(0)])
    got = loss(x, t)
    want = sum(row_loss(r, int(c)) for r, c in zip(x.reshape(-1, 4), t.reshape(-1), strict=True)) / 6
    if abs(got - want) > 1e-12 * want:
        climb_failed(f"logits of shape (2, 3, 4) with targets (2, 3): loss {got:.10g}, expected the mean of the "
                     f"six positions' losses {want:.10g}", aligned((2, 3)))  # fmt: skip


@rung(5)
def test_cross_entropy_ignores_a_constant_added_to_a_row():
    got, want = loss(ROWS + 1000.0, TARGETS), loss(ROWS, TARGETS)
    if not math.isfinite(got) or abs(got - want) > 1e-10 * want:
        climb_failed(
            f"logits + 1000 gave loss {got:.10g}, the same logits {want:.10g}",
            "subtract each row's max before exp (exp(1000) overflows): log(sum(exp(x - m))) - (x[t] - m)",
        )


@rung(6)
def test_cross_entropy_of_logits_of_1e4_is_finite():
    x = torch.tensor([[1e4, -1e4, 0.0], [1e4, -1e4, 0.0]], dtype=torch.float64)
    got = loss(x, torch.tensor([0, 1]))
    if got != 1e4:
        climb_failed(f"logits (1e4, -1e4, 0) with targets 0 and 1: loss {got}, expected (0 + 2e4) / 2 = 1e4",
                     "no exp of a large logit (subtract the max) and no log of a probability that rounds to 0")  # fmt: skip


@rung(7)
def test_cross_entropy_computes_half_inputs_in_float32():
    x, t = torch.tensor([[0.0, -3.0]], dtype=torch.bfloat16), torch.tensor([0])
    out = run_cross_entropy(x, t)
    if out.dtype != x.dtype:
        climb_failed(f"bfloat16 logits gave a loss of dtype {out.dtype}",
                     "return the loss in inputs' dtype: compute half types in float32, then convert back once")  # fmt: skip
    got, want = float(out), float(torch.tensor(row_loss(x[0].double(), 0)).to(torch.bfloat16))
    if got != want:
        climb_failed(f"bfloat16 logits (0, -3), target 0: loss {got:.6g}, expected {want:.6g} (log(1 + exp(-3)), "
                     "rounded once to bfloat16); the float64 rungs pass, so some arithmetic was rounded to "
                     "bfloat16 along the way (its 8 bits cannot hold 1 + exp(-3))",
                     "the handout asks for half types computed in float32 (unlike F.cross_entropy on bfloat16): "
                     "convert the logits first, and the loss back to inputs' dtype at the end")  # fmt: skip
