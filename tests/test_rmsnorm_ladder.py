"""rmsnorm, rung by rung: shape and dtype, a row you can check by hand, every row over its own last
dimension, the gain, eps inside the square root, and float16 inputs computed in float32
(tests/_ladder.py)."""

import torch

from ._helpers import F64
from ._ladder import climb_failed, rung
from .adapters import run_rmsnorm

ROW = [1e9, 7e9]  # mean of squares 2.5e19, rms 5e9: eps 1e-5 (inside or outside the root) changes it by < 3e-15
WANT = [0.2, 1.4]
# float64: a square, a mean, a square root and a product each round to half a unit in the last place
REL = 1e-14


def norm(x, weight=None, eps: float = 1e-5) -> torch.Tensor:
    x = torch.as_tensor(x, dtype=F64)
    weight = torch.ones(x.shape[-1], dtype=x.dtype) if weight is None else torch.as_tensor(weight, dtype=x.dtype)
    return run_rmsnorm(x.shape[-1], eps, weight, x)


def off(got: torch.Tensor, want, rel: float = REL) -> bool:
    want = torch.as_tensor(want, dtype=F64).expand_as(got)
    return not bool(((got.double() - want).abs() <= rel * want.abs()).all())  # NaN is off


@rung(1)
def test_rmsnorm_returns_the_shape_and_dtype_of_its_input():
    for dtype in (F64, torch.float16):
        x = torch.linspace(-3, 3, 24, dtype=dtype).reshape(2, 3, 4)
        out = run_rmsnorm(4, 1e-5, torch.ones(4, dtype=dtype), x)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != dtype:
            got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(
                f"input of shape (2, 3, 4) and dtype {dtype} gave {got}",
                "return x's shape and dtype (compute in float32, then cast the result back to x.dtype)",
            )


@rung(2)
def test_rmsnorm_of_a_row_is_the_row_over_its_root_mean_square():
    got = norm([[ROW]]).flatten()  # shape (1, 1, 2): any reduction axis of 3-D input reaches the row
    if off(got, WANT):
        climb_failed(
            f"the row [1e9, 7e9] (mean of squares 2.5e19, rms 5e9) gave {got.tolist()}, not [0.2, 1.4]",
            "RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g, the mean over the last dimension",
        )


@rung(3)
def test_rmsnorm_normalises_each_row_over_its_own_last_dimension():
    x = torch.tensor(ROW, dtype=F64) * torch.tensor([1.0, 10.0, 2.0, 3.0, 100.0, 5.0], dtype=F64).reshape(2, 3, 1, 1)
    got = norm(x)  # shape (2, 3, 1, 2): six rows, multiples of [1e9, 7e9]
    if off(got, WANT):
        rows = [[round(v, 4) for v in r] for r in got.reshape(6, 2).tolist()]
        climb_failed(
            f"an input of shape (2, 3, 1, 2) whose six rows are multiples of [1e9, 7e9] gave rows {rows}, not "
            "each [0.2, 1.4]",
            "the mean of squares of each row alone: over dim=-1 with keepdim=True, for any number of dimensions",
        )


@rung(4)
def test_rmsnorm_multiplies_by_the_gain():
    got = norm(ROW, weight=[2.0, -3.0])
    if off(got, [0.4, -4.2]):
        climb_failed(
            f"the row [1e9, 7e9] with gain [2, -3] gave {got.tolist()}, not [0.2 * 2, 1.4 * -3] = [0.4, -4.2]",
            "multiply the normalised row by the gain `weight`, entry by entry",
        )


@rung(5)
def test_rmsnorm_adds_eps_inside_the_square_root():
    got = norm([1.0, 7.0], eps=11.0)  # sqrt(25 + 11) = 6
    if off(got, [1 / 6, 7 / 6]):
        climb_failed(
            f"the row [1, 7] (mean of squares 25) with eps 11 gave {got.tolist()}, not [1, 7] / sqrt(25 + 11) = "
            "[1/6, 7/6]",
            "eps inside the square root, and the eps argument given: x / sqrt(mean(x^2) + eps)",
        )


def f16_ulp(exact: torch.Tensor) -> torch.Tensor:
    """float16's spacing at each value: its eps times the power of two below the value."""
    info = torch.finfo(torch.float16)
    return torch.exp2(torch.floor(torch.log2(exact.abs().clamp(min=info.tiny)))) * info.eps


@rung(6)
def test_rmsnorm_computes_float16_inputs_in_float32():
    x = torch.tensor([300.0, 2100.0], dtype=torch.float16)  # squares 9e4 and 4.4e6: above float16's 65504
    got = run_rmsnorm(2, 1e-5, torch.ones(2, dtype=torch.float16), x).double()
    want = torch.tensor(WANT, dtype=F64)
    # computed in float32 and rounded once to float16: within one float16 unit of [0.2, 1.4]
    if not bool(((got - want).abs() <= f16_ulp(want)).all()):
        climb_failed(
            f"the float16 row [300, 2100] gave {got.tolist()}, not about [0.2, 1.4] (its squares overflow float16)",
            "compute half-precision inputs in float32 (x.float()) and cast the result back once",
        )
