"""Scaled dot-product attention (CS336 section 3.5.4) against torch's fused
F.scaled_dot_product_attention. Tolerances: tests/floors.py ("attention.*"), the floors
measured by measure_floors below (seeds 0-49)."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F
from cs336_basics.testing import scaled_error

from . import oracles
from ._helpers import F64, assert_close, rand
from .adapters import run_scaled_dot_product_attention
from .floors import MaxErrors, tol

F32, BF16 = torch.float32, torch.bfloat16
SHAPES = {"3d": ((2, 5, 16), (2, 7, 16), (2, 7, 8)), "4d": ((2, 3, 5, 16), (2, 3, 7, 16), (2, 3, 7, 8)),
          "5d": ((2, 2, 3, 5, 16), (2, 2, 3, 7, 16), (2, 2, 3, 7, 8))}  # fmt: skip


@pytest.mark.parametrize("case", fixture_names("attention"))
def test_attention_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_scaled_dot_product_attention(**fx.kwargs), fx)


def qkv(shape_id="4d", seed=0, dtype=F64):
    (q, k, v) = SHAPES[shape_id]
    return (
        rand(*q, std=1.5, seed=seed, dtype=dtype),
        rand(*k, seed=seed + 100, dtype=dtype),
        rand(*v, seed=seed + 200, dtype=dtype),
    )


def witness_mask(queries=5, keys=7, seed=0):
    """Not causal, not symmetric, every row with at least one True (the built-in gives NaN for
    a fully masked row): a mask with inverted polarity or ignored fails."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(queries, keys, generator=g) > 0.5
    mask[torch.arange(queries), torch.randint(0, keys, (queries,), generator=g)] = True
    return mask


@pytest.mark.parametrize("shape", SHAPES)
def test_attention_matches_torch_builtin_with_a_non_causal_mask(shape):
    Q, K, V = qkv(shape)
    mask = witness_mask()
    assert_close(
        F.scaled_dot_product_attention(Q, K, V, mask),
        oracles.sdpa(Q, K, V, mask),
        tol("attention.f64"),
        "SDPA vs built-in",
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_attention_matches_torch_builtin_without_mask(shape):
    Q, K, V = qkv(shape)
    assert_close(
        F.scaled_dot_product_attention(Q, K, V), oracles.sdpa(Q, K, V), tol("attention.f64"), "SDPA vs built-in"
    )


def test_attention_adapter_matches_torch_builtin_in_float32():
    Q, K, V = qkv("4d", dtype=F32)
    mask = witness_mask()
    expected = oracles.sdpa(Q.double(), K.double(), V.double(), mask)
    out = run_scaled_dot_product_attention(Q, K, V, mask)
    assert out.dtype == F32
    assert_close(out.double(), expected, tol("attention.f32"), "adapter")


def test_attention_mask_with_leading_dims_applies_per_batch_entry():
    Q, K, V = qkv("4d")
    mask = torch.stack([witness_mask(seed=s) for s in range(2)])[:, None]  # (2, 1, 5, 7)
    assert_close(
        F.scaled_dot_product_attention(Q, K, V, mask),
        oracles.sdpa(Q, K, V, mask),
        tol("attention.f64"),
        "per-batch mask",
    )


def test_attention_fully_masked_query_gives_zeros_not_nan():
    Q, K, V = qkv("3d")
    mask = witness_mask()
    mask[2] = False
    out = F.scaled_dot_product_attention(Q, K, V, mask)
    assert torch.equal(out[:, 2], torch.zeros_like(out[:, 2]))
    rows = [0, 1, 3, 4]
    assert_close(out[:, rows], oracles.sdpa(Q, K, V, mask)[:, rows], tol("attention.f64"), "the other rows")


def test_attention_bfloat16_is_as_accurate_as_the_builtin():
    """Scores and softmax in float32: no further from the float64 truth than torch's own kernel."""
    Q, K, V = qkv("4d", dtype=BF16)
    mask = witness_mask()
    truth = oracles.sdpa(Q.double(), K.double(), V.double(), mask)
    ours = F.scaled_dot_product_attention(Q, K, V, mask)
    assert ours.dtype == BF16
    assert float(scaled_error(ours.double(), truth).max()) <= tol("attention.bf16")


def test_attention_keeps_large_scores_finite():
    Q, K, V = qkv("3d")
    out = F.scaled_dot_product_attention(Q * 1e4, K, V)  # scores ~1e4: exp overflows without the max shift
    assert torch.isfinite(out).all()
    assert_close(out, oracles.sdpa(Q * 1e4, K, V), tol("attention.f64_large_scores"), "large scores")


def measure_floors(seeds=range(50)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above."""
    floors = MaxErrors()
    for seed in seeds:
        mask = witness_mask(seed=seed)
        for shape in SHAPES:
            Q, K, V = qkv(shape, seed)
            for m in (mask, None):
                floors.keep("attention.f64", F.scaled_dot_product_attention(Q, K, V, m), oracles.sdpa(Q, K, V, m))
            big = Q * 1e4
            floors.keep(
                "attention.f64_large_scores", F.scaled_dot_product_attention(big, K, V), oracles.sdpa(big, K, V)
            )
        Q, K, V = qkv("4d", seed, F32)
        floors.keep("attention.f32", run_scaled_dot_product_attention(Q, K, V, mask),
             oracles.sdpa(Q.double(), K.double(), V.double(), mask))  # fmt: skip
        Q, K, V = qkv("4d", seed, BF16)
        truth = oracles.sdpa(Q.double(), K.double(), V.double(), mask)
        for out in (F.scaled_dot_product_attention(Q, K, V, mask), oracles.sdpa(Q, K, V, mask)):
            floors.keep("attention.bf16", out, truth)
    return floors
