"""Staff: the reference RMSNorm's two cast orders, measured. The default (CS336) normalises and
multiplies by the gain in float32 and rounds once; cast_before_gain=True is Meta's llama and
Hugging Face's LlamaRMSNorm. These pin the reference's documented numerics (tests/staff/README.md);
students are graded on accuracy, not on one cast order."""

import pytest
import torch

from cs336_basics.nn import functional as F
from cs336_basics.testing import scaled_error

from ..floors import MaxErrors, tol
from ..test_dtypes import F64, HALF, NAMES, inputs

EPS = 1e-5  # the kernels' default, passed explicitly

pytestmark = pytest.mark.slow  # second tier: a measurement of the two cast orders

# ---------------------------------------------------------------------------------------------
# RMSNorm cast order. Default (CS336): normalise and multiply by the gain in float32, cast once.
# cast_before_gain=True (Meta llama, HF LlamaRMSNorm): cast the normalised value, then multiply
# by the gain in the input dtype.


def _llama_rmsnorm(x, g, eps=EPS):
    """Hugging Face LlamaRMSNorm.forward, written out (importing transformers takes ~18 s)."""
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return g * h.to(x.dtype)


def _rmsnorm_cast_order_case(dtype):
    x = inputs("rmsnorm", (64, 512), scale=3.0, offset=0.5 / 3.0, dtype=dtype, seed=0)[0]
    g = inputs("rmsnorm", (512,), dtype=dtype, seed=100)[1]  # gain ~ N(1, 0.25), exact in dtype
    return x, g


@pytest.mark.parametrize("dtype", HALF, ids=NAMES.get)
def test_rmsnorm_cast_before_gain_matches_llama(dtype):
    x, g = _rmsnorm_cast_order_case(dtype)
    assert torch.equal(F.rmsnorm(x, g, cast_before_gain=True), _llama_rmsnorm(x, g))


@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=NAMES.get)
def test_rmsnorm_cast_orders_are_identical_without_a_downcast(dtype):
    x, g = _rmsnorm_cast_order_case(dtype)
    assert torch.equal(F.rmsnorm(x, g), F.rmsnorm(x, g, cast_before_gain=True))


# Measured on _rmsnorm_cast_order_case(bfloat16), 64 x 512, against the float64 rmsnorm of the
# same bf16 values: max scaled error default 3.00e-3, cast_before_gain 5.09e-3; mean 4.8e-4 vs
# 6.6e-4; the outputs differ in 26.0% of elements, and the default is never the farther one.
# Seeds 1-3 (x and gain redrawn): max 2.8-2.9e-3 vs 4.8-5.9e-3, 25.5-26.1% differ, the default
# farther at 1 of 3 x 32768 elements (a near-tie: truth 9e-9 below the bf16 midpoint, float32
# landed above it). One rounding is at most half a bf16 ulp; rounding the normalised value and
# then the product can reach a whole ulp. The floor ("rmsnorm.cast_orders_bf16") is the farther
# order's.


def _rmsnorm_bf16_cast_order_errors():
    x, g = _rmsnorm_cast_order_case(torch.bfloat16)
    truth = F.rmsnorm(x.double(), g.double())
    default, llama = F.rmsnorm(x, g), F.rmsnorm(x, g, cast_before_gain=True)
    return default, llama, scaled_error(default, truth), scaled_error(llama, truth)


def test_rmsnorm_both_cast_orders_are_within_bf16_tolerance():
    _, _, err_default, err_llama = _rmsnorm_bf16_cast_order_errors()
    assert float(err_default.max()) <= tol("rmsnorm.cast_orders_bf16")
    assert float(err_llama.max()) <= tol("rmsnorm.cast_orders_bf16")


def test_rmsnorm_cast_orders_differ_in_bf16():
    default, llama, _, _ = _rmsnorm_bf16_cast_order_errors()
    assert float((default != llama).double().mean()) > 0.10  # measured 26.0%


def test_rmsnorm_default_cast_order_is_at_least_as_accurate_in_bf16():
    _, _, err_default, err_llama = _rmsnorm_bf16_cast_order_errors()
    assert float(err_default.max()) < float(err_llama.max())  # 3.00e-3 < 5.09e-3
    assert float(err_default.mean()) < float(err_llama.mean())  # 4.8e-4 < 6.6e-4


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of both cast orders against the float64 truth, on the case
    above (`seeds` do not apply)."""
    floors = MaxErrors()
    x, g = _rmsnorm_cast_order_case(torch.bfloat16)
    truth = F.rmsnorm(x.double(), g.double())
    for cast_before_gain in (False, True):
        floors.keep("rmsnorm.cast_orders_bf16", F.rmsnorm(x, g, cast_before_gain=cast_before_gain), truth)
    return floors
