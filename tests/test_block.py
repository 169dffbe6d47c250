"""The pre-norm decoder block against Hugging Face's LlamaDecoderLayer and against the
CS336 adapter's formula written with built-ins. Tolerances: tests/floors.py ("block.*"), the
floors measured by measure_floors below (seeds 0-19)."""

import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import TransformerBlock

from . import oracles
from ._helpers import F64, assert_close, rand
from .adapters import run_transformer_block
from .floors import MaxErrors, tol

F32 = torch.float32
D, H, SEQ, THETA, MAX_LEN, EPS = 48, 136, 9, 500.0, 64, 1e-5


@pytest.mark.parametrize("case", fixture_names("block"))
def test_block_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_transformer_block(**fx.kwargs), fx)


def cs336_weights(num_kv_heads=2, seed=0, dtype=F64):
    d_kv = D // 4 * num_kv_heads
    shapes = {"attn.q_proj.weight": (D, D), "attn.k_proj.weight": (d_kv, D), "attn.v_proj.weight": (d_kv, D),
              "attn.output_proj.weight": (D, D), "ffn.w1.weight": (H, D), "ffn.w2.weight": (D, H), "ffn.w3.weight": (H, D)}  # fmt: skip
    w = {k: rand(*s, std=0.3, seed=seed + i, dtype=dtype) for i, (k, s) in enumerate(shapes.items())}
    w |= {
        n: rand(D, std=0.5, mean=1.0, seed=seed + 50 + i, dtype=dtype)
        for i, n in enumerate(("ln1.weight", "ln2.weight"))
    }
    return w


def builtin_block(w, x):
    """x + MHA(RMSNorm(x)); then + SwiGLU(RMSNorm(.)), with F.rms_norm, F.linear, F.silu, F.sdpa."""
    rope = lambda t, p: oracles.rope_complex(t, THETA, p)  # noqa: E731
    h = x + oracles.mha(TF.rms_norm(x, (D,), w["ln1.weight"], EPS), w["attn.q_proj.weight"], w["attn.k_proj.weight"],
                        w["attn.v_proj.weight"], w["attn.output_proj.weight"], 4, rope)  # fmt: skip
    return h + oracles.swiglu_ffn(
        TF.rms_norm(h, (D,), w["ln2.weight"], EPS), w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"]
    )


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1], ids=["mh", "gq", "mq"])
def test_block_adapter_matches_builtins(num_kv_heads):
    w, x = cs336_weights(num_kv_heads), rand(2, SEQ, D, seed=7)
    assert_close(
        run_transformer_block(D, 4, H, MAX_LEN, THETA, w, x),
        builtin_block(w, x),
        tol("block.f64"),
        "block vs built-ins",
    )


def test_block_state_dict_keys_follow_cs336():
    keys = set(TransformerBlock(D, 4, H, MAX_LEN, THETA).state_dict())
    assert keys == set(cs336_weights(4))


def measure_floors(seeds=range(20)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above."""
    floors = MaxErrors()
    for seed in seeds:
        for kv in (4, 2, 1):
            w, x = cs336_weights(kv, seed), rand(2, SEQ, D, seed=seed + 7)
            floors.keep("block.f64", run_transformer_block(D, 4, H, MAX_LEN, THETA, w, x), builtin_block(w, x))
    return floors
