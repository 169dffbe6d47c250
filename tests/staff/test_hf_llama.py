"""The decoder against Hugging Face transformers' Llama modules (staff only: the handout does not
install transformers): RoPE as rotate-half on de-interleaved dimensions, attention with
positions that are not 0..n-1, the decoder layer and the whole model, tied and untied. The
modules are built from a tiny config (never downloaded) and their weights copied into ours
through cs336_basics.nn.convert. `uv run python -m tests.staff.measure_floors --ungraded` measures
the `*.hf` floors with measure_floors() below."""

import pytest
import torch

from cs336_basics.nn import MultiHeadSelfAttention, RotaryPositionalEmbedding, TransformerBlock, TransformerLM
from tests import test_block as block
from tests import test_lm as lm
from tests import test_mha as mha
from tests import test_rope as rope
from tests._helpers import assert_close, rand
from tests.adapters import run_rope
from tests.floors import MaxErrors, tol

from . import _llama_oracles as L

F32 = torch.float32


@pytest.fixture(scope="module")
def hf():
    return L.import_hf()


def hf_rotate_half_rope(hf, x, positions):
    """HF's apply_rotary_pos_emb on x with its dimensions de-interleaved (pairs -> halves), then re-interleaved."""
    d_k = rope.D_K
    config = L.llama_config(hf, d_model=d_k, num_heads=1, num_kv_heads=1, theta=rope.THETA, max_pos=rope.MAX_LEN)
    halves = torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)  # (..., seq, d_k)
    cos, sin = L.position_embeddings(hf, config, halves, positions[None])
    out, _ = hf.ml.apply_rotary_pos_emb(halves, halves, cos, sin, unsqueeze_dim=0)
    return torch.stack([out[..., : d_k // 2], out[..., d_k // 2 :]], dim=-1).flatten(-2).reshape(x.shape)


def hf_mha(hf, num_heads, num_kv_heads, seed=0):
    config = L.llama_config(hf, d_model=mha.D, num_heads=num_heads, num_kv_heads=num_kv_heads, theta=mha.THETA,
                            max_pos=mha.MAX_LEN)  # fmt: skip
    theirs = L.hf_attn(hf, config, seed)
    rotary = RotaryPositionalEmbedding(mha.THETA, mha.D // num_heads, mha.MAX_LEN)
    return L.ours_from(theirs, MultiHeadSelfAttention(mha.D, num_heads, num_kv_heads, rotary)), theirs, config


def hf_block(hf, seed=0):
    config = L.llama_config(hf, d_model=block.D, num_heads=4, num_kv_heads=2, d_ff=block.H, theta=block.THETA,
                            max_pos=block.MAX_LEN, eps=block.EPS)  # fmt: skip
    layer = L.hf_layer(hf, config, seed)
    ours = TransformerBlock(block.D, 4, block.H, block.MAX_LEN, block.THETA, num_kv_heads=2, eps=block.EPS)
    return L.ours_from(layer, ours), layer, config


def hf_lm(hf, tie=False, seed=0):
    config = L.llama_config(hf, d_model=lm.D, num_heads=lm.HEADS, num_kv_heads=lm.KV, d_ff=lm.H, vocab_size=lm.V,
                            theta=lm.THETA, num_layers=lm.LAYERS, max_pos=lm.CTX, tie=tie)  # fmt: skip
    theirs = L.hf_model(hf, config, seed)
    return L.ours_from(theirs, TransformerLM(lm.config(tie))), theirs


def test_rope_matches_hf_rotate_half_on_deinterleaved_dims(hf):
    x = rope.x_of(dtype=F32)
    expected = hf_rotate_half_rope(hf, x, rope.POSITIONS)
    actual = run_rope(rope.D_K, rope.THETA, rope.MAX_LEN, x, rope.POSITIONS)
    assert_close(actual, expected, tol("rope.hf"), "RoPE vs HF rotate-half")


@pytest.mark.parametrize("heads", mha.HEADS)
def test_mha_matches_hf_llama_with_positions_not_arange(hf, heads):
    ours, theirs, config = hf_mha(hf, *mha.HEADS[heads])
    x, positions = mha.x_of(dtype=F32), mha.POSITIONS.expand(2, -1)
    with torch.no_grad():
        expected = L.hf_attn_forward(hf, config, theirs, x, positions)
        assert_close(ours(x, positions), expected, tol("mha.hf"), f"{heads} vs HF")


def test_block_matches_hf_llama_decoder_layer(hf):
    ours, layer, config = hf_block(hf)
    x = rand(2, block.SEQ, block.D, seed=7, dtype=F32)
    positions = torch.arange(block.SEQ).expand(2, -1)
    with torch.no_grad():
        expected = L.hf_layer_forward(hf, config, layer, x, positions)
        assert_close(ours(x), expected, tol("block.hf"), "block vs LlamaDecoderLayer")


@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
def test_lm_matches_hf_llama_for_causal_lm(hf, tie):
    ours, theirs = hf_lm(hf, tie)
    for ids in (lm.ids_of(), lm.ids_of(seq=5)):
        with torch.no_grad():
            assert_close(ours(ids), theirs(ids).logits, tol("lm.hf"), "logits vs LlamaForCausalLM")


def measure_floors(seeds: range | None = None) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above (by default 50 seeds
    for RoPE, 20 for attention and the layer, 10 for the model)."""
    floors, hf = MaxErrors(), L.import_hf()
    for seed in seeds or range(50):
        x32 = rope.x_of(2, seed=seed, dtype=F32)
        floors.keep("rope.hf", run_rope(rope.D_K, rope.THETA, rope.MAX_LEN, x32, rope.POSITIONS),
                    hf_rotate_half_rope(hf, x32, rope.POSITIONS))  # fmt: skip
    with torch.no_grad():
        for seed in seeds or range(20):
            for nh, nkv in mha.HEADS.values():
                ours, theirs, config = hf_mha(hf, nh, nkv, seed)
                x32, pos = mha.x_of(seed, F32), mha.POSITIONS.expand(2, -1)
                floors.keep("mha.hf", ours(x32, pos), L.hf_attn_forward(hf, config, theirs, x32, pos))
            ours, layer, config = hf_block(hf, seed)
            x = rand(2, block.SEQ, block.D, seed=seed + 7, dtype=F32)
            positions = torch.arange(block.SEQ).expand(2, -1)
            floors.keep("block.hf", ours(x), L.hf_layer_forward(hf, config, layer, x, positions))
        for seed in seeds or range(10):
            for tie in (False, True):
                ours, theirs = hf_lm(hf, tie, seed)
                for seq in (5, 11, lm.CTX):
                    ids = lm.ids_of(seq, seed)
                    floors.keep("lm.hf", ours(ids), theirs(ids).logits)
    return floors
