"""Every kernel in every dtype: output dtype, where the casts happen, agreement with the PyTorch
built-in run in the same dtype, the RMSNorm cast order, and stability at extreme inputs.

KERNELS and `inputs` are shared with tests/test_gradients.py and the course staff's property tests.
"""

from functools import partial

import pytest
import torch

from cs336_basics.nn import functional as F
from cs336_basics.testing import scaled_error, tolerance

from . import oracles
from ._helpers import F64, assert_close
from .floors import KERNEL_TABLES, MaxErrors, kernel_floor_name, kernel_tol

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
HALF = [torch.bfloat16, torch.float16]
NAMES = {torch.float32: "float32", torch.float64: "float64", torch.bfloat16: "bfloat16", torch.float16: "float16"}


def _ours(kernel: str, **kwargs):
    """functional.<kernel>, looked up at each call (an accepted variant the staff swap in is measured)."""

    def call(*args):
        return getattr(F, kernel)(*args, **kwargs)

    return call


# KERNELS: one row per row of tests/floors.py's per-dtype table (KERNEL_TABLES["builtin"]):
# row -> (our kernel, the PyTorch built-in it must agree with), both taking inputs(row, ...) and
# the row's keywords. The kernel a row runs, and with which keywords, is declared by that kernel's
# entry of tests/oracles.py's BUILTIN_KERNELS (Builtin.rows); _ROWS: row -> (kernel, keywords).
_ROWS = {
    row: (kernel, keywords)
    for kernel, builtin in oracles.BUILTIN_KERNELS.items()
    for row, keywords in (builtin.rows or {kernel: {}}).items()
}
KERNELS = {
    name: (_ours(kernel, **kwargs), partial(oracles.BUILTIN_KERNELS[kernel].fn, **kwargs))
    for name in KERNEL_TABLES["builtin"]
    for kernel, kwargs in [_ROWS[name]]
}


def _builtin(name: str) -> oracles.Builtin:
    """The BUILTIN_KERNELS entry of row `name`'s kernel."""
    return oracles.BUILTIN_KERNELS[_ROWS[name][0]]


def inputs(name: str, shape, scale: float = 1.0, offset: float = 0.0, dtype=F64, seed: int = 0) -> list:
    """Arguments for row `name` of KERNELS: x = scale * (offset + N(0, 1)) of `shape` (last dim d),
    then the arguments after x its kernel's BUILTIN_KERNELS entry declares (Builtin.args(d)), drawn
    in that order from one generator in float64 and rounded to `dtype`. A kernel of token ids
    (Builtin.token_ids) takes ids of `shape` without d, drawn first, and x as a (token_ids, d) table."""
    builtin = _builtin(name)
    g = torch.Generator().manual_seed(seed)

    def randn(size, std=1.0, mean=0.0):
        return (torch.randn(size, generator=g, dtype=F64) * std + mean).to(dtype)

    d = shape[-1]
    ids = [torch.randint(0, builtin.token_ids, tuple(shape[:-1]), generator=g)] if builtin.token_ids else []
    x = randn((builtin.token_ids, d) if builtin.token_ids else tuple(shape), std=scale, mean=offset * scale)
    return [*ids, x, *(randn(arg.shape, std=arg.std, mean=arg.mean) for arg in builtin.args(d))]


def _fixed(name: str, dtype) -> list:
    """The fixed input of this file: shape (3, 5, 32), scale 2, offset 0.3."""
    return inputs(name, (3, 5, 32), scale=2.0, offset=0.3, dtype=dtype, seed=1)


# ---------------------------------------------------------------------------------------------
# Output dtype and agreement with the built-in in the same dtype.


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("name", KERNELS)
def test_output_dtype_is_input_dtype(name, dtype):
    ours, _ = KERNELS[name]
    assert ours(*_fixed(name, dtype)).dtype == dtype


# Our kernel against the built-in run in the same dtype, on _fixed(name, dtype): floors in
# tests/floors.py ("<kernel>.builtin_<dtype>"). 0 = bit-identical. The float64 column also pins
# "float64 stays float64": a float32 computation would be off by ~1e-7.


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of every kernel against its built-in in every dtype, on the
    one fixed input the test compares (`seeds` do not apply)."""
    floors = MaxErrors()
    for name, (ours, builtin) in KERNELS.items():
        for dtype in DTYPES:
            args = _fixed(name, dtype)
            floors.keep(kernel_floor_name("builtin", name, dtype), ours(*args), builtin(*args))
    return floors


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("name", KERNELS)
def test_matches_torch_builtin_in_same_dtype(name, dtype, record_property):
    ours, builtin = KERNELS[name]
    args = _fixed(name, dtype)
    actual, expected = ours(*args), builtin(*args)
    record_property("max_scaled_err", float(scaled_error(actual, expected).max()))
    assert_close(actual, expected, kernel_tol("builtin", name, dtype), f"{name} vs built-in in {NAMES[dtype]}")


# ---------------------------------------------------------------------------------------------
# Accuracy in half precision: computed in float32 and rounded once (README), a pointwise or
# normalising kernel is within half an ulp of the truth; 4 x u (tolerance(0, dtype)) leaves room
# for a few roundings inside, not for intermediates kept in the half type where they overflow or
# cancel. The truth is the same kernel in float64 on the same (rounded) inputs.

UPCAST = [name for name in KERNELS if _builtin(name).upcast]  # the rows of kernels declared upcast=True


@pytest.mark.parametrize("dtype", HALF, ids=NAMES.get)
@pytest.mark.parametrize("name", UPCAST)
def test_half_precision_is_within_a_few_ulps_of_the_truth(name, dtype):
    ours, _ = KERNELS[name]
    args = _fixed(name, dtype)
    truth = ours(*[a.double() for a in args])
    assert_close(ours(*args), truth.to(dtype), tolerance(0.0, dtype), f"{name} in {NAMES[dtype]} vs float64 truth")


# ---------------------------------------------------------------------------------------------
# Stability at extreme inputs: finite outputs with the right limits, in every dtype.

BIG = {torch.float32: 3e38, torch.float64: 1e308, torch.bfloat16: 3e38, torch.float16: 65504.0}


def _extremes(dtype, sign: float):
    return torch.tensor([sign * 1e4, sign * BIG[dtype]], dtype=dtype)


# Contrast: the naive x / (1 + exp(-x)) is also finite here in every dtype (exp(1e4) = inf and
# -x / inf = -0.0, measured), so there is no forward witness; its *gradient* is NaN for large
# negative x, which tests/test_gradients.py shows.
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_silu_is_finite_at_extremes(dtype):
    x = torch.cat([_extremes(dtype, -1.0), _extremes(dtype, 1.0)])
    assert bool(F.silu(x).isfinite().all())


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_silu_is_identity_for_large_positive_inputs(dtype):
    x = _extremes(dtype, 1.0)
    assert_close(F.silu(x), x, 0.0, "F.silu(x) vs x")


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_silu_is_zero_for_large_negative_inputs(dtype):
    assert bool((F.silu(_extremes(dtype, -1.0)) == 0).all())  # -0.0: x times a sigmoid of +0


# torch's own F.gelu (erf) returns inf at 3e38 in float32 and bfloat16 (measured, torch 2.15);
# ours computes 0.5 * x * 2 and returns x.
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_finite_at_extremes(approximate, dtype):
    neg, pos = _extremes(dtype, -1.0), _extremes(dtype, 1.0)
    assert_close(F.gelu(pos, approximate=approximate), pos, 0.0, "F.gelu(pos, approximate=approximate) vs pos")
    assert bool((F.gelu(neg, approximate=approximate) == 0).all())


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_softmax_is_finite_for_logits_of_1e4(dtype):
    x = torch.tensor([[1e4, -1e4, 0.0, 1e4], [-1e4, -1e4, -1e4, -1e4]], dtype=dtype)
    expected = torch.tensor([[0.5, 0.0, 0.0, 0.5], [0.25, 0.25, 0.25, 0.25]], dtype=dtype)
    assert_close(F.softmax(x), expected, tolerance(0.0, dtype), "softmax of logits 1e4")


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_softmax_of_row_with_one_unmasked_entry_is_one_hot(dtype):
    inf = float("inf")
    x = torch.tensor([[-inf, 2.0, -inf, -inf], [-inf, -inf, -inf, -1e4]], dtype=dtype)
    expected = torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]], dtype=dtype)
    assert_close(F.softmax(x), expected, 0.0, "F.softmax(x) vs expected")


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_softmax_of_fully_masked_row_is_zeros(dtype):
    x = torch.tensor([[-float("inf")] * 4, [0.0, 1.0, 2.0, 3.0]], dtype=dtype)
    out = F.softmax(x)
    assert_close(out[0], torch.zeros(4, dtype=dtype), 0.0, "out[0] vs torch.zeros(4, dtype=dtype)")
    assert_close(
        out[1], F.softmax(x[1]), 0.0, "out[1] vs F.softmax(x[1])"
    )  # the masked row does not disturb the others


# d_model = 1: x - mean(x) = 0, so the output is the bias exactly. torch's F.layer_norm misses
# this by up to 5e-2 (scaled) in bfloat16/float16 at scale ~500 (measured): its fused half path
# computes x * a + c with a = rstd * g, c = b - mean * rstd * g and cancels in float32.
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_layernorm_of_one_feature_is_its_bias(dtype):
    x, g, b = inputs("layernorm", (4, 3, 1), scale=500.0, offset=1.0, dtype=dtype, seed=3)
    assert_close(F.layernorm(x, g, b), b.expand(4, 3, 1), 0.0, "F.layernorm(x, g, b) vs b.expand(4, 3, 1)")
