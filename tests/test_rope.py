"""Rotary position embeddings (Su et al. 2021; CS336 section 3.5.3: adjacent pairs) against
Meta's complex-number formula and Hugging Face's rotate-half on de-interleaved dimensions.
Tolerances: tests/floors.py ("rope.*"), the floors measured by measure_floors below (seeds 0-49)."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import RotaryPositionalEmbedding
from cs336_basics.nn import functional as F
from cs336_basics.testing import scaled_error

from . import oracles
from ._helpers import F64, assert_close, rand
from .adapters import run_rope
from .floors import MaxErrors, tol

F32, BF16 = torch.float32, torch.bfloat16
D_K, THETA, MAX_LEN = 16, 500.0, 64
# Not 0..n-1: gaps, a repeat and a decrease, so an implementation that ignores token_positions fails.
POSITIONS = torch.tensor([3, 7, 7, 12, 40, 2, 63])


@pytest.mark.parametrize("case", fixture_names("rope"))
def test_rope_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_rope(**fx.kwargs), fx)


def x_of(*batch, seed=0, dtype=F64):
    return rand(*batch, len(POSITIONS), D_K, std=1.5, seed=seed, dtype=dtype)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)], ids=["2d", "3d", "4d"])
def test_rope_kernel_matches_complex_rotation(batch):
    x = x_of(*batch)
    cos, sin = F.rope_cos_sin(D_K, THETA, MAX_LEN)
    assert_close(
        F.rope(x, cos, sin, POSITIONS), oracles.rope_complex(x, THETA, POSITIONS), tol("rope.f64"), "RoPE vs complex"
    )


def test_rope_adapter_with_per_batch_positions():
    x = x_of(2, dtype=F32)
    positions = torch.stack([POSITIONS, POSITIONS.flip(0)])  # (batch, seq): each row its own positions
    out = run_rope(D_K, THETA, MAX_LEN, x, positions)
    assert out.dtype == F32
    assert_close(out.double(), oracles.rope_complex(x.double(), THETA, positions), tol("rope.f32"), "run_rope")


def test_rope_bfloat16_is_computed_in_float32():
    x = x_of(2, dtype=BF16)
    out = run_rope(D_K, THETA, MAX_LEN, x, POSITIONS)
    assert out.dtype == BF16
    truth = oracles.rope_complex(x.double(), THETA, POSITIONS)
    assert float(scaled_error(out.double(), truth).max()) <= tol("rope.bf16")


def test_rope_position_zero_is_the_identity():
    x = x_of()
    assert torch.equal(run_rope(D_K, THETA, MAX_LEN, x, torch.zeros(len(POSITIONS), dtype=torch.long)), x)


def offset_scores(q, k, m: int, n: int):
    """RoPE(q at position m) @ RoPE(k at position n)^T: every query's dot product with every key."""
    cos, sin = F.rope_cos_sin(D_K, THETA, MAX_LEN)
    at = lambda t, p: F.rope(t, cos, sin, torch.full(t.shape[:1], p))  # noqa: E731
    return at(q, m) @ at(k, n).T


def test_rope_dot_product_depends_only_on_the_offset():
    """<RoPE(q, m), RoPE(k, n)> is a function of m - n (Su et al. 2021, eq. 11)."""
    q, k = rand(8, D_K, seed=1), rand(8, D_K, seed=2)
    assert_close(offset_scores(q, k, 10, 3), offset_scores(q, k, 50, 43), tol("rope.offset"), "scores at offset 7")


def test_rope_buffers_stay_out_of_the_state_dict():
    rope = RotaryPositionalEmbedding(THETA, D_K, MAX_LEN)
    assert dict(rope.state_dict()) == {}
    assert rope.cos.shape == rope.sin.shape == (MAX_LEN, D_K // 2)


def test_rope_cast_to_half_keeps_float64_tables():
    rope = RotaryPositionalEmbedding(THETA, D_K, MAX_LEN).to(torch.float16)
    assert rope.cos.dtype == F64


def test_rope_position_beyond_max_seq_len_raises():
    with pytest.raises(ValueError, match=r"token_positions must lie in \[0, max_seq_len=64\), got values in \[2, 64\]"):
        run_rope(D_K, THETA, MAX_LEN, x_of(), torch.tensor([3, 7, 7, 12, 40, 2, 64]))


def measure_floors(seeds=range(50)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above."""
    floors, (cos, sin) = MaxErrors(), F.rope_cos_sin(D_K, THETA, MAX_LEN)
    for seed in seeds:
        x = x_of(2, 3, seed=seed)
        floors.keep("rope.f64", F.rope(x, cos, sin, POSITIONS), oracles.rope_complex(x, THETA, POSITIONS))
        x32 = x_of(2, seed=seed, dtype=F32)
        truth = oracles.rope_complex(x32.double(), THETA, POSITIONS)
        floors.keep("rope.f32", run_rope(D_K, THETA, MAX_LEN, x32, POSITIONS), truth)
        xb = x_of(2, seed=seed, dtype=BF16)
        floors.keep("rope.bf16", run_rope(D_K, THETA, MAX_LEN, xb, POSITIONS),
                    oracles.rope_complex(xb.double(), THETA, POSITIONS))  # fmt: skip
        q, k = rand(8, D_K, seed=seed + 1), rand(8, D_K, seed=seed + 2)
        floors.keep("rope.offset", offset_scores(q, k, 10, 3), offset_scores(q, k, 50, 43))
    return floors
