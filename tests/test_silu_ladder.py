"""silu, rung by rung: shape and dtype, x * sigmoid(x) on numbers you can check by hand, finite
outputs for large |x|, float16 inputs computed in float32, and a finite gradient for large |x|
(tests/_ladder.py)."""

import math

import torch

from ._helpers import F64
from ._ladder import climb_failed, rung
from .adapters import run_silu

X = [0.0, 1.0, -1.0, 2.0, -3.0]
# float64: x * sigmoid(x) and its rewrites (x / (1 + exp(-x))) agree to a few units in the last place
REL = 1e-14


def silu_of(x: float) -> float:
    return x / (1.0 + math.exp(-x))


def looks_like(got: list[float]) -> str:
    """What the outputs equal, among the usual other activations, or ''."""
    others = {
        "sigmoid(x) alone": [1 / (1 + math.exp(-x)) for x in X],
        "max(x, 0) (ReLU)": [max(x, 0.0) for x in X],
        "x * Phi(x) (GELU)": [0.5 * x * math.erfc(-x / math.sqrt(2)) for x in X],
    }
    for what, vals in others.items():
        if all(abs(g - v) <= 1e-9 * (abs(v) + 1e-300) for g, v in zip(got, vals, strict=True)):
            return f": that is {what}"
    return ""


def half_ulp(exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` (float16, bfloat16) at each value: its eps times the power of two below
    the value, or times the smallest normal for subnormals."""
    info = torch.finfo(dtype)
    return torch.exp2(torch.floor(torch.log2(exact.abs().clamp(min=info.tiny)))) * info.eps


@rung(1)
def test_silu_returns_the_shape_and_dtype_of_its_input():
    for dtype in (F64, torch.float16):
        x = torch.linspace(-3, 3, 24, dtype=dtype).reshape(2, 3, 4)
        out = run_silu(x)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != dtype:
            got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(f"input of shape (2, 3, 4) and dtype {dtype} gave {got}", "return x's shape and dtype")


@rung(2)
def test_silu_is_x_times_sigmoid_x():
    got = run_silu(torch.tensor(X, dtype=F64)).tolist()
    want = [silu_of(x) for x in X]
    if not all(abs(g - w) <= REL * abs(w) for g, w in zip(got, want, strict=True)):  # NaN fails
        climb_failed(
            f"x = {X} gave {[round(g, 6) for g in got]}, not x * sigmoid(x) = {[round(w, 6) for w in want]}"
            f"{looks_like(got)}",
            "the formula SiLU(x) = x * sigmoid(x) = x / (1 + exp(-x))",
        )


@rung(3)
def test_silu_of_large_inputs_is_finite():
    x = torch.tensor([-1000.0, -100.0, 100.0, 1000.0], dtype=F64)
    out = run_silu(x)
    if not torch.isfinite(out).all() or not torch.allclose(out[2:], x[2:], rtol=1e-15, atol=0):
        climb_failed(
            f"x = [-1000, -100, 100, 1000] gave {out.tolist()}, not about [-0, -3.7e-42, 100, 1000]",
            "exp(x) and exp(-x) overflow to inf for |x| > 709 (inf / inf is NaN): write sigmoid as "
            "torch.sigmoid (1 / (1 + exp(-x)) gives the right output here, but a NaN gradient: rung 5)",
        )


@rung(4)
def test_silu_computes_float16_inputs_in_float32():
    x = torch.linspace(-16, -10, 25, dtype=F64).half()  # sigmoid(x) below float16's normal range
    out = run_silu(x).double()
    exact = x.double() * torch.sigmoid(x.double())
    ulp = half_ulp(exact, torch.float16)
    # computed in float32 and rounded once to float16: within one float16 unit of the exact value
    bad = (out - exact).abs() > ulp
    if bad.any():
        i = int(bad.nonzero()[0])
        climb_failed(
            f"float16 x = {float(x[i])} gave {float(out[i]):.6g}, exact {float(exact[i]):.6g} (float16 rounds "
            f"once to within {float(ulp[i]):.2g}); {int(bad.sum())} of 25 inputs in [-16, -10] are off by more",
            "compute half-precision inputs in float32 (x.float()) and cast the result back once",
        )


@rung(5)
def test_silu_gradient_is_finite_for_large_inputs():
    x = torch.tensor([-1e4, -1000.0, -100.0, 100.0, 1000.0, 1e4], dtype=F64, requires_grad=True)
    (got,) = torch.autograd.grad(run_silu(x).sum(), x)
    s = torch.sigmoid(x.detach())
    want = s * (1 + x.detach() * (1 - s))  # d/dx x * sigmoid(x)
    if not torch.isfinite(got).all() or not torch.allclose(got, want, rtol=1e-12, atol=1e-300):
        climb_failed(
            f"the gradient of sum(silu(x)) at x = [-1e4, -1000, -100, 100, 1000, 1e4] is {got.tolist()}, not "
            f"about {[float(f'{w:.2g}') for w in want.tolist()]}",
            "autograd differentiates the formula as written: with exp(-x) = inf inside a quotient "
            "(x / (1 + exp(-x)), or 1 / (1 + exp(-x)) as the sigmoid) the gradient is inf / inf = NaN, though "
            "the output is right; torch.sigmoid's gradient stays finite",
        )
