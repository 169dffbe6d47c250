"""gelu, rung by rung: shape and dtype, the exact form 0.5 x (1 + erf(x / sqrt 2)) and the tanh
approximation on numbers you can check by hand, each chosen by `approximate`, and bfloat16 inputs
computed in float32 (tests/_ladder.py)."""

import math

import torch

from ._helpers import F64
from ._ladder import climb_failed, rung
from .adapters import run_gelu

X = [0.0, 1.0, -1.0, 2.0, -2.0]
# float64 on |x| <= 2: 1 + erf(x / sqrt 2) >= 0.045 loses under 5 bits to cancellation, so every
# way of writing the formula agrees to well under 1e-14 relative
REL = 1e-14


def exact(x: float) -> float:
    return 0.5 * x * math.erfc(-x / math.sqrt(2))


def tanh_form(x: float) -> float:
    return 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


FORMS = {
    "the exact form 0.5 x (1 + erf(x / sqrt 2))": exact,
    "the tanh approximation": tanh_form,
    "x * sigmoid(1.702 x)": lambda x: x / (1 + math.exp(-1.702 * x)),
}


def check_form(approximate: str, want_name: str, look_at: str) -> None:
    got = run_gelu(torch.tensor(X, dtype=F64), approximate=approximate).tolist()
    want = [FORMS[want_name](x) for x in X]
    if all(abs(g - w) <= REL * abs(w) for g, w in zip(got, want, strict=True)):
        return
    seen = next(
        (
            f": that is {name}"
            for name, f in FORMS.items()
            if all(abs(g - f(x)) <= 1e-9 * abs(f(x)) for g, x in zip(got, X, strict=True))
        ),
        "",
    )
    climb_failed(
        f"approximate={approximate!r}, x = {X} gave {[round(g, 7) for g in got]}, not {want_name} "
        f"= {[round(w, 7) for w in want]}{seen}",
        look_at,
    )


@rung(1)
def test_gelu_returns_the_shape_and_dtype_of_its_input():
    for dtype in (F64, torch.bfloat16):
        for approximate in ("none", "tanh"):
            x = torch.linspace(-3, 3, 24, dtype=dtype).reshape(2, 3, 4)
            out = run_gelu(x, approximate=approximate)
            if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != dtype:
                got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
                climb_failed(
                    f"approximate={approximate!r}, input of shape (2, 3, 4) and dtype {dtype} gave {got}",
                    "return x's shape and dtype",
                )


@rung(2)
def test_gelu_exact_form_is_x_times_the_normal_cdf():
    check_form(
        "none",
        "the exact form 0.5 x (1 + erf(x / sqrt 2))",
        "approximate='none': GELU(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (torch.erf / torch.erfc)",
    )


@rung(3)
def test_gelu_tanh_form_is_the_tanh_approximation():
    check_form(
        "tanh",
        "the tanh approximation",
        "approximate='tanh': 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))",
    )


def bf16_ulp(exact: torch.Tensor) -> torch.Tensor:
    """bfloat16's spacing at each value: its eps times the power of two below the value."""
    info = torch.finfo(torch.bfloat16)
    return torch.exp2(torch.floor(torch.log2(exact.abs().clamp(min=info.tiny)))) * info.eps


@rung(4)
def test_gelu_computes_bfloat16_inputs_in_float32():
    x = torch.linspace(-3.5, -2, 25, dtype=F64).bfloat16()  # the left tail: erfc magnifies rounding
    for approximate, form in (("none", exact), ("tanh", tanh_form)):
        out = run_gelu(x, approximate=approximate).double()
        want = torch.tensor([form(v) for v in x.double().tolist()], dtype=F64)
        # computed in float32 and rounded once to bfloat16: within one bfloat16 unit of the exact value
        bad = (out - want).abs() > bf16_ulp(want)
        if bad.any():
            i = int(bad.nonzero()[0])
            climb_failed(
                f"approximate={approximate!r}, bfloat16 x = {float(x[i])} gave {float(out[i]):.5g}, exact "
                f"{float(want[i]):.5g}; {int(bad.sum())} of 25 inputs in [-3.5, -2] are more than one bfloat16 "
                "unit off",
                "compute half-precision inputs in float32 (x.float()) and cast the result back once",
            )
