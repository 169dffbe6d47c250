"""softmax, rung by rung: shape and dtype, a row you can check by hand, large logits, the `dim`
argument, -inf entries and fully masked rows, float16 inputs computed in float32, and a zero
gradient on a fully masked row (tests/_ladder.py)."""

import math

import torch

from ._helpers import F64
from ._ladder import climb_failed, rung
from .adapters import run_softmax

ROW = [0.0, math.log(2.0), math.log(3.0)]  # exp: 1, 2, 3 -> 1/6, 2/6, 3/6
WANT = [1 / 6, 2 / 6, 3 / 6]
# float64: exp, one sum and one division each round to a unit or two in the last place
REL = 1e-14


def off(got: list[float], want: list[float], rel: float = REL) -> bool:
    """Any entry farther than rel from its value (NaN is)."""
    return not all(abs(g - w) <= rel * abs(w) for g, w in zip(got, want, strict=True))


@rung(1)
def test_softmax_returns_the_shape_and_dtype_of_its_input():
    for dtype in (F64, torch.float16):
        x = torch.linspace(-3, 3, 24, dtype=dtype).reshape(2, 3, 4)
        out = run_softmax(x, dim=-1)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != dtype:
            got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(f"input of shape (2, 3, 4) and dtype {dtype} gave {got}", "return x's shape and dtype")


@rung(2)
def test_softmax_of_a_row_is_its_exps_over_their_sum():
    got = run_softmax(torch.tensor(ROW, dtype=F64), dim=0).tolist()
    if off(got, WANT):
        climb_failed(
            f"the row [0, ln 2, ln 3] (exps 1, 2, 3) gave {[round(g, 6) for g in got]} (sum {sum(got):.6g}), "
            "not [1/6, 2/6, 3/6]",
            "softmax(x)_i = exp(x_i) / sum_j exp(x_j): each exp divided by the sum of the row's exps",
        )


@rung(3)
def test_softmax_of_logits_plus_1000_is_the_same_and_finite():
    got = run_softmax(torch.tensor([1000.0, 1001.0, 1002.0], dtype=F64), dim=0).tolist()
    want = [math.exp(k) / (1 + math.e + math.e**2) for k in (0, 1, 2)]  # softmax of [0, 1, 2]
    # x - c for any c near 1000 (the max, a log-sum-exp) is rounded to ulp(1000) = 1.1e-13, which
    # the exp carries as a relative error: 1e-12 is a few such roundings
    if off(got, want, rel=1e-12):
        climb_failed(
            f"the row [1000, 1001, 1002] gave {got}, not softmax([0, 1, 2]) = {[round(w, 6) for w in want]}",
            "exp(1000) overflows to inf: subtract the row's max before exp (softmax is unchanged by a shift)",
        )


@rung(4)
def test_softmax_normalises_along_dim():
    x = torch.tensor([ROW, [5.0, 5.0, 5.0]], dtype=F64)  # 2 x 3
    got = run_softmax(x.T.contiguous(), dim=0)  # 3 x 2: columns [0, ln 2, ln 3] and [5, 5, 5]
    want = torch.tensor([WANT, [1 / 3] * 3], dtype=F64).T
    if not torch.allclose(got, want, rtol=REL, atol=0):
        climb_failed(
            f"a 3 x 2 input with dim=0 gave column sums {[round(s, 6) for s in got.sum(0).tolist()]} and row "
            f"sums {[round(s, 6) for s in got.sum(1).tolist()]}; with dim=0 each column sums to 1",
            "normalise along the `dim` argument (max, sum with dim=dim, keepdim=True), not always the last",
        )


@rung(5)
def test_softmax_gives_minus_inf_entries_probability_zero():
    got = run_softmax(torch.tensor([0.0, -math.inf, math.log(3.0)], dtype=F64), dim=0).tolist()
    if off(got, [0.25, 0.0, 0.75]):
        climb_failed(
            f"the row [0, -inf, ln 3] gave {got}, not [1/4, 0, 3/4]",
            "exp(-inf) = 0: a masked entry takes no probability, the others are normalised without it",
        )


@rung(6)
def test_softmax_of_a_fully_masked_row_is_zeros():
    x = torch.tensor([ROW, [-math.inf] * 3], dtype=F64)
    got = run_softmax(x, dim=-1)
    if not (torch.equal(got[1], torch.zeros(3, dtype=F64)) and not off(got[0].tolist(), WANT)):
        climb_failed(
            f"the rows [0, ln 2, ln 3] and [-inf, -inf, -inf] gave {got.tolist()}; the handout's softmax gives "
            "[1/6, 2/6, 3/6] and zeros for a row with every entry masked",
            "in a row of -inf the max is -inf (x - max is NaN) and the sum of exps 0 (0 / 0 is NaN): keep the "
            "max finite and the sum nonzero",
        )


@rung(7)
def test_softmax_computes_float16_inputs_in_float32():
    n = 70_000  # more entries than float16's largest finite value, 65504
    got = run_softmax(torch.zeros(1, n, dtype=torch.float16), dim=-1).double()
    want = torch.tensor(1 / n, dtype=torch.float16).double()  # 1/70000 rounded once to float16
    if not torch.equal(got, torch.full_like(got, float(want))):
        climb_failed(
            f"a float16 row of {n} zeros gave entries from {float(got.min()):.3g} to {float(got.max()):.3g}, not "
            f"1/{n} = {float(want):.3g} (the sum of its exps, {n}, is inf in float16)",
            "compute half-precision inputs in float32 (x.float()) and cast the result back once",
        )


@rung(8)
def test_softmax_gradient_of_a_fully_masked_row_is_zero():
    x = torch.tensor([ROW, [-math.inf] * 3], dtype=F64, requires_grad=True)
    # weights of 8 and more: a sum clamped at the smallest positive float (2.2e-308) gives g / tiny,
    # past float64's largest value (1.8e308) once |g| > 4
    weights = torch.tensor([[1.0, 2.0, 3.0], [8.0, 16.0, 24.0]], dtype=F64)
    (got,) = torch.autograd.grad((run_softmax(x, dim=-1) * weights).sum(), x)
    if not torch.equal(got[1], torch.zeros(3, dtype=F64)):
        climb_failed(
            f"the gradient of sum(softmax(x) * [8, 16, 24]) on the row [-inf, -inf, -inf] is {got[1].tolist()}, "
            "not zeros",
            "autograd differentiates everything the row's -inf went through: repairing the output afterwards "
            "(NaN replaced by 0, or a -inf logsumexp swapped for 0) leaves NaN in the gradient, and so does a "
            "zero sum clamped at the smallest positive float (g / tiny overflows; inf x 0 is NaN); keep the "
            "row's max finite before exp and replace its zero sum by 1",
        )
