"""layernorm, rung by rung: shape and dtype, a row you can check by hand, the gain and the bias,
eps inside the square root, a row far from zero, and bfloat16 inputs computed in float32
(tests/_ladder.py)."""

import torch

from ._helpers import F64
from ._ladder import climb_failed, rung
from .adapters import run_layernorm

ROW = [1e9, 1e9, 5e9, 5e9]  # mean 3e9, variance 4e18 (std 2e9): eps 1e-5 changes the output by 1e-24
WANT = [-1.0, -1.0, 1.0, 1.0]
# float64: a mean, a difference, a variance, a square root and a product each round to half a unit
REL = 1e-14


def norm(x, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    x = torch.as_tensor(x, dtype=F64)
    d = x.shape[-1]
    weight = torch.ones(d, dtype=x.dtype) if weight is None else torch.as_tensor(weight, dtype=x.dtype)
    bias = torch.zeros(d, dtype=x.dtype) if bias is None else torch.as_tensor(bias, dtype=x.dtype)
    return run_layernorm(d, eps, weight, bias, x)


def off(got: torch.Tensor, want, rel: float = REL) -> bool:
    want = torch.as_tensor(want, dtype=F64).expand_as(got)
    return not bool(((got.double() - want).abs() <= rel * want.abs()).all())  # NaN is off


@rung(1)
def test_layernorm_returns_the_shape_and_dtype_of_its_input():
    for dtype in (F64, torch.bfloat16):
        x = torch.linspace(-3, 3, 24, dtype=dtype).reshape(2, 3, 4)
        out = run_layernorm(4, 1e-5, torch.ones(4, dtype=dtype), torch.zeros(4, dtype=dtype), x)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != dtype:
            got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(
                f"input of shape (2, 3, 4) and dtype {dtype} gave {got}",
                "return x's shape and dtype (compute in float32, then cast the result back to x.dtype)",
            )


@rung(2)
def test_layernorm_of_a_row_is_its_deviations_over_their_standard_deviation():
    got = norm(ROW)
    if off(got, WANT):
        climb_failed(
            f"the row [1e9, 1e9, 5e9, 5e9] (mean 3e9, variance 4e18 dividing by d_model = 4) gave "
            f"{[round(v, 6) for v in got.tolist()]}, not [-1, -1, 1, 1]",
            "LayerNorm(x) = (x - mean) / sqrt(var + eps) * g + b, var the mean of (x - mean)^2 (divide by d_model)",
        )


@rung(3)
def test_layernorm_normalises_each_row_over_its_own_last_dimension():
    scale = torch.tensor([1.0, 10.0, 2.0, 3.0, 100.0, 5.0], dtype=F64).reshape(2, 3, 1, 1)
    got = norm(torch.tensor(ROW, dtype=F64) * scale)  # shape (2, 3, 1, 4): six rows, multiples of ROW
    if off(got, WANT):
        climb_failed(
            f"an input of shape (2, 3, 1, 4) whose six rows are multiples of [1e9, 1e9, 5e9, 5e9] gave rows "
            f"{[[round(v, 4) for v in r] for r in got.reshape(6, 4).tolist()]}, not each [-1, -1, 1, 1]",
            "the mean and variance of each row alone: over dim=-1 with keepdim=True",
        )


@rung(4)
def test_layernorm_multiplies_by_the_gain_and_adds_the_bias():
    got = norm(ROW, weight=[2.0, 3.0, 4.0, 5.0], bias=[0.5, 0.25, 0.125, 1.0])
    if off(got, [-1.5, -2.75, 4.125, 6.0]):
        climb_failed(
            f"the row [1e9, 1e9, 5e9, 5e9] (normalised [-1, -1, 1, 1]) with gain [2, 3, 4, 5] and bias "
            f"[0.5, 0.25, 0.125, 1] gave {got.tolist()}, not [-1.5, -2.75, 4.125, 6]",
            "multiply the normalised row by the gain `weight`, then add `bias`, entry by entry",
        )


@rung(5)
def test_layernorm_adds_eps_inside_the_square_root():
    got = norm([1.0, 1.0, 5.0, 5.0], eps=5.0)  # variance 4: sqrt(4 + 5) = 3
    if off(got, [-2 / 3, -2 / 3, 2 / 3, 2 / 3]):
        climb_failed(
            f"the row [1, 1, 5, 5] (variance 4) with eps 5 gave {got.tolist()}, not [-2, -2, 2, 2] / sqrt(4 + 5)",
            "eps inside the square root, and the eps argument given: (x - mean) / sqrt(var + eps)",
        )


@rung(6)
def test_layernorm_of_a_row_far_from_zero_depends_only_on_its_deviations():
    got = norm([1e8 - 1, 1e8 - 1, 1e8 + 1, 1e8 + 1], eps=1e-300)  # exact in float64; deviations -1, 1
    if off(got, WANT):
        climb_failed(
            f"the row [1e8 - 1, 1e8 - 1, 1e8 + 1, 1e8 + 1] (variance 1) gave {got.tolist()}, not [-1, -1, 1, 1]; "
            "mean(x^2) - mean(x)^2 subtracts two numbers of 1e16, whose float64 spacing is 2",
            "the variance as the mean of (x - mean)^2, after subtracting the mean",
        )


@rung(7)
def test_layernorm_computes_bfloat16_inputs_in_float32():
    x = torch.tensor([256.0, 256.0, 258.0, 258.0], dtype=torch.bfloat16)  # mean 257: not a bfloat16
    got = run_layernorm(4, 1e-5, torch.ones(4, dtype=x.dtype), torch.zeros(4, dtype=x.dtype), x).double()
    # in float32: (x - 257) / sqrt(1 + 1e-5) rounds once to bfloat16's -1 and 1 (spacing 2^-7 near 1)
    if not torch.equal(got, torch.tensor(WANT, dtype=F64)):
        climb_failed(
            f"the bfloat16 row [256, 256, 258, 258] gave {got.tolist()}, not [-1, -1, 1, 1] (its mean, 257, "
            "rounds to 256 or 258 in bfloat16)",
            "compute half-precision inputs in float32 (x.float()) and cast the result back once",
        )
