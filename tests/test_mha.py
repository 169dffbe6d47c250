"""Causal multi-head self-attention, without and with RoPE, grouped-query and multi-query,
against F.linear + F.scaled_dot_product_attention(is_causal, enable_gqa) and Hugging Face's
LlamaAttention (weights through nn.convert, which reorders HF's rotate-half q/k rows).
Tolerances: tests/floors.py ("mha.*"), the floors measured by measure_floors below (seeds 0-19)."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import MultiHeadSelfAttention, RotaryPositionalEmbedding
from cs336_basics.nn import functional as F
from cs336_basics.nn.kv_cache import KVCache

from . import adapters, oracles
from ._helpers import F64, assert_close, rand
from .adapters import run_multihead_self_attention, run_multihead_self_attention_with_rope
from .floors import MaxErrors, tol

F32 = torch.float32
D, SEQ, THETA, MAX_LEN = 48, 9, 500.0, 64
HEADS = {"mha": (4, 4), "gqa": (4, 2), "mqa": (4, 1)}  # (num_heads, num_kv_heads)
POSITIONS = torch.tensor([3, 5, 6, 10, 11, 20, 21, 22, 40])  # increasing but not 0..n-1


@pytest.mark.parametrize("case", fixture_names("mha"))
def test_mha_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)  # with or without RoPE, or cached


def weights(num_heads, num_kv_heads, seed=0, dtype=F64):
    d_kv = D // num_heads * num_kv_heads
    return dict(q_proj_weight=rand(D, D, std=0.3, seed=seed, dtype=dtype), k_proj_weight=rand(d_kv, D, std=0.3, seed=seed + 1, dtype=dtype),
                v_proj_weight=rand(d_kv, D, std=0.3, seed=seed + 2, dtype=dtype), o_proj_weight=rand(D, D, std=0.3, seed=seed + 3, dtype=dtype))  # fmt: skip


def builtin_mha(num_heads, w, x, token_positions=None, rope=False):
    """The attention of oracles.mha (F.linear and F.scaled_dot_product_attention), RoPE as Meta writes it."""
    rotate = (lambda t, p: oracles.rope_complex(t, THETA, p)) if rope else None
    return oracles.mha(x, w["q_proj_weight"], w["k_proj_weight"], w["v_proj_weight"], w["o_proj_weight"], num_heads,
                       rotate, token_positions)  # fmt: skip


def x_of(seed=0, dtype=F64):
    return rand(2, SEQ, D, seed=seed + 10, dtype=dtype)


@pytest.mark.parametrize("heads", HEADS)
def test_mha_without_rotation_matches_torch_builtins(heads):
    num_heads, num_kv_heads = HEADS[heads]
    w, x = weights(num_heads, num_kv_heads), x_of()
    expected = builtin_mha(num_heads, w, x)
    assert_close(run_multihead_self_attention(D, num_heads, **w, in_features=x), expected, tol("mha.f64"), heads)


@pytest.mark.parametrize("heads", HEADS)
def test_mha_with_rotation_and_positions_matches_torch_builtins(heads):
    num_heads, num_kv_heads = HEADS[heads]
    w, x = weights(num_heads, num_kv_heads), x_of()
    expected = builtin_mha(num_heads, w, x, POSITIONS, rope=True)
    actual = run_multihead_self_attention_with_rope(
        D, num_heads, MAX_LEN, THETA, **w, in_features=x, token_positions=POSITIONS
    )
    assert_close(actual, expected, tol("mha.f64"), heads)


def test_mha_output_at_a_position_ignores_later_tokens():
    w = weights(4, 2)
    x = x_of()
    changed = x.clone()
    changed[:, 5:] += 1.0
    a = run_multihead_self_attention(D, 4, **w, in_features=x)
    b = run_multihead_self_attention(D, 4, **w, in_features=changed)
    assert torch.equal(a[:, :5], b[:, :5]) and not torch.allclose(a[:, 5:], b[:, 5:])


def seeded_mha(num_heads, num_kv_heads, seed=0) -> MultiHeadSelfAttention:
    torch.manual_seed(seed)
    return MultiHeadSelfAttention(D, num_heads, num_kv_heads, RotaryPositionalEmbedding(THETA, D // num_heads, MAX_LEN))


def test_mha_cached_steps_match_the_whole_sequence():
    module = seeded_mha(4, 2)
    x = x_of(dtype=F32)
    cache = KVCache(MAX_LEN)
    with torch.no_grad():
        steps = [module(x[:, :4], kv_cache=cache)] + [module(x[:, i : i + 1], kv_cache=cache) for i in range(4, SEQ)]
        assert_close(torch.cat(steps, dim=1), module(x), tol("mha.cache"), "prefill + one token at a time vs whole")


def test_mha_state_dict_keys_follow_cs336():
    module = MultiHeadSelfAttention(D, 4, 2, RotaryPositionalEmbedding(THETA, 12, MAX_LEN))
    assert {k: tuple(v.shape) for k, v in module.state_dict().items()} == {
        "q_proj.weight": (48, 48), "k_proj.weight": (24, 48), "v_proj.weight": (24, 48), "output_proj.weight": (48, 48)
    }  # fmt: skip


@pytest.mark.parametrize("num_queries, num_keys", [(6, 6), (1, 6), (3, 7)], ids=["square", "one_cached_step", "cached"])
def test_mha_causal_mask_lets_each_query_see_itself_and_earlier_keys(num_queries, num_keys):
    position = torch.arange(num_keys - num_queries, num_keys)[:, None]  # the queries are the last positions
    expected = torch.arange(num_keys)[None, :] <= position
    mask = F.causal_mask(num_queries, num_keys)
    assert mask.dtype == torch.bool and torch.equal(mask, expected), f"got\n{mask.int()}\nexpected\n{expected.int()}"


def measure_floors(seeds=range(20)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above."""
    floors = MaxErrors()
    for seed in seeds:
        for nh, nkv in HEADS.values():
            w, x = weights(nh, nkv, seed), x_of(seed)
            floors.keep("mha.f64", run_multihead_self_attention(D, nh, **w, in_features=x), builtin_mha(nh, w, x))
            floors.keep("mha.f64", run_multihead_self_attention_with_rope(D, nh, MAX_LEN, THETA, **w, in_features=x, token_positions=POSITIONS),
                        builtin_mha(nh, w, x, POSITIONS, rope=True))  # fmt: skip
            ours = seeded_mha(nh, nkv, seed)
            x32 = x_of(seed, F32)
            with torch.no_grad():
                cache = KVCache(MAX_LEN)
                steps = [ours(x32[:, :4], kv_cache=cache)] + [
                    ours(x32[:, i : i + 1], kv_cache=cache) for i in range(4, SEQ)
                ]
                floors.keep("mha.cache", torch.cat(steps, 1), ours(x32))
    return floors


def test_mha_padding_mask_must_cover_the_cached_and_new_keys():
    attn = MultiHeadSelfAttention(16, 4)
    x = torch.randn(2, 3, 16)
    with pytest.raises(
        ValueError, match=r"attention_mask must be a torch.bool tensor of shape \(\.\.\., cached \+ seq\) = \(2, 3\)"
    ):
        attn(x, attention_mask=torch.ones(2, 4, dtype=torch.bool))


def test_mha_padding_mask_hides_the_padding_keys():
    """A left-padded row gives its real tokens the outputs they have without the padding."""
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(16, 4, rope=RotaryPositionalEmbedding(THETA, 4, MAX_LEN)).double()
    x = torch.randn(1, 3, 16, dtype=torch.float64)
    padded = torch.cat([torch.randn(1, 2, 16, dtype=torch.float64), x], dim=1)  # two padding tokens first
    mask = torch.tensor([[False, False, True, True, True]])
    positions = torch.tensor([[0, 0, 0, 1, 2]])
    assert torch.allclose(attn(padded, positions, attention_mask=mask)[:, 2:], attn(x), atol=1e-12, rtol=0)


def test_mha_causal_mask_is_built_on_the_given_device():
    mask = F.causal_mask(3, 5, device="meta")
    assert mask.device.type == "meta" and mask.dtype == torch.bool and mask.shape == (3, 5)


def test_mha_grouped_query_takes_a_mask_per_query_head():
    """A (num_heads, queries, keys) mask: query head h gets row h, its key/value head h // group."""
    q, k, v = (
        rand(2, 4, 5, 8, seed=0, dtype=F64),
        rand(2, 2, 7, 8, seed=1, dtype=F64),
        rand(2, 2, 7, 8, seed=2, dtype=F64),
    )
    mask = torch.rand(4, 5, 7, generator=torch.Generator().manual_seed(3)) > 0.5
    mask[..., 0] = True  # every query may attend to a key (the built-in gives NaN otherwise)
    expected = oracles.sdpa(q, k.repeat_interleave(2, dim=-3), v.repeat_interleave(2, dim=-3), mask)
    assert_close(F.grouped_query_attention(q, k, v, mask), expected, tol("attention.f64"), "a mask per query head")


def test_mha_two_token_sequence_is_causal():
    """The first of two tokens sees only itself: its output is the one it has alone."""
    module, x = seeded_mha(4, 2).double(), x_of()
    with torch.no_grad():
        assert_close(module(x[:, :2])[:, :1], module(x[:, :1]), tol("mha.cache"), "first of two vs alone")


def test_mha_kernel_splits_heads_by_the_query_projection_s_rows_not_d_model():
    # one rank's share of the split attention (nn/parallel/attention.py): d_q = 8 rows of 12 = d_model,
    # so each of the 2 heads has d_k = 4 (the rows over the heads), not d_model / heads = 6
    w = {name: rand(8, 12, seed=i) for i, name in enumerate(("q_proj_weight", "k_proj_weight", "v_proj_weight"))}
    w["o_proj_weight"] = rand(12, 8, seed=3)
    x = rand(2, 5, 12, seed=4)
    expected = oracles.mha(x, w["q_proj_weight"], w["k_proj_weight"], w["v_proj_weight"], w["o_proj_weight"], 2)
    assert_close(F.multihead_self_attention(x, **w, num_heads=2), expected, tol("mha.f64"), "d_q = 8, d_model = 12")
