"""Multi-head self-attention: the builders of its inputs (attention weights and padding too, which
the model's builders use), then its cases and what they grade of the public tests, then its
mistakes, accepted variants and alternative solutions."""

from functools import partial

import torch
from torch import Tensor

from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.attention import draw_positions
from cs336_basics.staff.cases.case import BF16, F64, Case
from cs336_basics.staff.cases.draw import Make, Rng, edited, linear_weight, randn
from cs336_basics.staff.mistakes import alternative, mistake, variant


def attn_weights(rng: Rng, d_model: int, num_heads: int, num_kv_heads: int, prefix: str = "") -> dict:
    d_k = d_model // num_heads
    return {
        f"{prefix}q_proj_weight": linear_weight(rng, d_model, d_model),
        f"{prefix}k_proj_weight": linear_weight(rng, num_kv_heads * d_k, d_model),
        f"{prefix}v_proj_weight": linear_weight(rng, num_kv_heads * d_k, d_model),
        f"{prefix}o_proj_weight": linear_weight(rng, d_model, d_model),
    }


def mha_case(
    batch: tuple[int, ...],
    seq: int,
    d_model: int,
    num_heads: int,
    num_kv_heads: int | None = None,
    theta: float | None = None,
    max_seq_len: int | None = None,
    positions: str = "none",
) -> Make:
    """Without theta: run_multihead_self_attention (no RoPE); with it: ..._with_rope. Queries
    and keys are scaled up (x_std 2) so that the attention is far from uniform."""

    def make(rng):
        kw = dict(
            d_model=d_model,
            num_heads=num_heads,
            **attn_weights(rng, d_model, num_heads, num_kv_heads or num_heads),
            in_features=randn(rng, *batch, seq, d_model, std=2.0),
        )
        if theta is not None:
            kw.update(max_seq_len=max_seq_len, theta=theta)
            pos = draw_positions(rng, batch, seq, max_seq_len, positions)
            if pos is not None:
                kw["token_positions"] = pos
        return kw

    return make


def left_padding(rng: Rng, batch: tuple[int, ...], seq: int) -> tuple[Tensor, Tensor]:
    """(attention_mask, token_positions) of shape (*batch, seq) for left-padded sequences: each
    starts with a drawn number of padding tokens (the first with none, the last with at least
    one), its own tokens counted from 0 after them."""
    pads = rng.integers(0, seq // 2 + 1, size=batch).reshape(-1)
    pads[0], pads[-1] = 0, max(1, pads[-1])
    mask = (torch.arange(seq)[None, :] >= torch.from_numpy(pads)[:, None]).reshape(*batch, seq)
    return mask, (torch.cumsum(mask.long(), dim=-1) - 1).clamp(min=0)


def mha_cached_case(
    batch: tuple[int, ...], seq: int, d_model: int, num_heads: int, num_kv_heads: int, prefill_length: int,
    theta: float = 10000.0, padded: bool = False,
) -> Make:  # fmt: skip
    """run_multihead_self_attention_cached: RoPE attention over a prefill then one token a call;
    padded: left padding masked out."""

    def make(rng):
        kw = dict(d_model=d_model, num_heads=num_heads, max_seq_len=2 * seq, theta=theta,
                  **attn_weights(rng, d_model, num_heads, num_kv_heads),
                  in_features=randn(rng, *batch, seq, d_model, std=2.0), prefill_length=prefill_length)  # fmt: skip
        if padded:
            kw["attention_mask"] = left_padding(rng, batch, seq)[0]
        return kw

    return make


multihead_self_attention = partial(Case, component="mha", adapter="run_multihead_self_attention")
multihead_self_attention_with_rope = partial(Case, component="mha", adapter="run_multihead_self_attention_with_rope")
multihead_self_attention_cached = partial(Case, component="mha", adapter="run_multihead_self_attention_cached")


CASES = [
    # mha: no RoPE; with RoPE, grouped-query (2 kv heads for 4 query heads) at positions not arange
    multihead_self_attention("mha", seed=32, make=mha_case((4,), 12, 64, 4), floor=2.9e-6),
    multihead_self_attention_with_rope(
        "mha_rotary_gqa",
        seed=33,
        make=mha_case((2,), 10, 64, 4, num_kv_heads=2, theta=10000.0, max_seq_len=64, positions="random"),
        floor=2.3e-6,
    ),
    multihead_self_attention("mha_4d_f64", seed=121, make=mha_case((2, 2), 5, 48, 3), floor=1.1e-15, dtype=F64),
    multihead_self_attention_with_rope(
        "mha_rotary_shuffled_bf16",
        seed=122,
        make=mha_case((), 8, 32, 2, num_kv_heads=1, theta=500000.0, max_seq_len=32, positions="shuffled"),
        floor=3.6e-2,
        dtype=BF16,
    ),
    # a prefill then one token a call with a key/value cache: positions continue from the cache
    # (a step at position 0 moves every later token's rotation), keys and values are kept, and
    # the left padding is masked at every step
    multihead_self_attention_cached(
        "mha_cached_4d_gqa_padded",
        seed=180,
        make=mha_cached_case((2, 2), 7, 32, 4, 2, prefill_length=3, padded=True),
        floor=2.0e-6,
    ),
    # three tokens a call after the prefill (as speculative decoding or a chunked prefill does): the
    # causal mask of a call's queries is offset by the keys already in the cache
    multihead_self_attention_cached(
        "mha_cached_steps_of_three",
        seed=203,
        make=edited(mha_cached_case((2,), 9, 32, 4, 2, prefill_length=2), lambda kw: kw.update(step_length=3)),
        floor=2.2e-6,
    ),
    # left padding: attention_mask hides each row's padding keys, at every cached step
    multihead_self_attention_cached(
        "mha_cached_padded_bf16",
        seed=181,
        make=mha_cached_case((3,), 6, 32, 2, 1, prefill_length=1, theta=500000.0, padded=True),
        floor=5.1e-2,
        dtype=BF16,
    ),
    # hidden: multi-query (one kv head) in bfloat16; 3-D batch of odd length with RoPE; one token
    multihead_self_attention_with_rope(
        "mha_mqa_bf16",
        hidden=True,
        seed=1121,
        make=mha_case((2,), 6, 48, 4, num_kv_heads=1, theta=10000.0, max_seq_len=16),
        floor=2.6e-2,
        dtype=BF16,
    ),
    multihead_self_attention_with_rope(
        "mha_3d_batch_odd",
        hidden=True,
        seed=1122,
        make=mha_case((2, 3), 7, 36, 3, theta=500000.0, max_seq_len=100, positions="random"),
        floor=1.5e-6,
    ),
    multihead_self_attention(
        "mha_one_token", hidden=True, seed=1123, make=mha_case((3,), 1, 32, 8, num_kv_heads=2), floor=2.3e-7
    ),
    multihead_self_attention_cached(
        "mha_cached_padded_f64",
        hidden=True,
        seed=1180,
        make=mha_cached_case((4,), 9, 48, 4, 4, prefill_length=5, padded=True),
        floor=1.5e-15,
        dtype=F64,
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "mha": {
        "test_mha_two_token_sequence_is_causal": ("mha_rotary_gqa", "mha_cached_steps_of_three"),
        "test_mha_matches_fixture": ("mha", "mha_rotary_gqa", "mha_4d_f64", "mha_rotary_shuffled_bf16"),
        "test_mha_without_rotation_matches_torch_builtins": ("mha", "mha_4d_f64"),
        "test_mha_with_rotation_and_positions_matches_torch_builtins": ("mha_rotary_gqa", "mha_3d_batch_odd"),
        "test_mha_output_at_a_position_ignores_later_tokens": ("mha", "mha_cached_4d_gqa_padded"),
        "test_mha_cached_steps_match_the_whole_sequence": ("mha_cached_4d_gqa_padded", "mha_cached_padded_f64"),
        "test_mha_state_dict_keys_follow_cs336": ("mha",),
        "test_mha_causal_mask_lets_each_query_see_itself_and_earlier_keys": ("mha", "mha_cached_4d_gqa_padded"),
        "test_mha_padding_mask_hides_the_padding_keys": ("mha_cached_padded_bf16", "mha_cached_padded_f64"),
        "test_mha_returns_the_shape_and_dtype_of_x": ("mha_4d_f64", "mha"),
        "test_mha_outputs_before_a_position_ignore_the_later_tokens": ("mha", "mha_cached_4d_gqa_padded"),
        "test_mha_padding_mask_hides_its_keys_in_one_call_and_in_steps": (
            "mha_cached_padded_f64",
            "mha_cached_4d_gqa_padded",
        ),
        "test_mha_first_token_attends_to_itself": ("mha", "mha_one_token"),
        "test_mha_splits_heads_into_consecutive_d_k_features": ("mha", "mha_4d_f64"),
        "test_mha_rotates_queries_and_keys_not_values": ("mha_rotary_gqa", "mha_3d_batch_odd"),
        "test_mha_with_rotation_ignores_a_shift_of_every_position": ("mha_rotary_gqa", "mha_3d_batch_odd"),
        "test_mha_rotates_at_the_token_positions": ("mha_rotary_gqa", "mha_rotary_shuffled_bf16"),
        "test_mha_grouped_query_heads_share_key_value_heads": ("mha_rotary_gqa", "mha_cached_4d_gqa_padded"),
        "test_mha_multi_query_heads_share_one_key_value_head": ("mha_rotary_shuffled_bf16", "mha_mqa_bf16"),
        "test_mha_cache_prefill_then_one_token_at_a_time_gives_the_whole_pass": (
            "mha_cached_4d_gqa_padded",
            "mha_cached_padded_f64",
        ),
        "test_mha_returns_bfloat16_for_bfloat16_inputs": ("mha_rotary_shuffled_bf16", "mha_mqa_bf16"),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_mha_padding_mask_must_cover_the_cached_and_new_keys": "the given argument check (_checks.padding_mask)",
    "test_mha_causal_mask_is_built_on_the_given_device": "a device: the grader runs every case on the CPU",
    "test_mha_grouped_query_takes_a_mask_per_query_head": "a mask with a head dimension: no adapter passes one (the model's masks are per key)",
    "test_mha_kernel_splits_heads_by_the_query_projection_s_rows_not_d_model": (
        "no mha adapter passes d_q != d_model (MultiHeadSelfAttention builds d_q = d_model); the split attention's "
        "graded cases (parallel_heads_*, parallel_model_*) run the kernel with one rank's d_q rows"
    ),
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- mha: each mistake changes one step of project -> split heads -> rotate -> attend -> merge ----


def _split_heads(t, d_k):
    return t.unflatten(-1, (-1, d_k)).transpose(-3, -2)  # (..., heads, seq, d_k)


def _rotate(x, rope_cache, token_positions, kv_cache, *heads):
    """RoPE at the reference's positions: token_positions, else those after what kv_cache holds."""
    if rope_cache is None:
        return heads
    past = kv_cache.length if kv_cache is not None else 0
    pos = (torch.arange(past, past + x.shape[-2]) if token_positions is None else token_positions).unsqueeze(-2)
    return tuple(F.rope(t, *rope_cache, pos) for t in heads)


def _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads, split=_split_heads):
    d_k = q_proj_weight.shape[0] // num_heads
    return (split(x @ w.T, d_k) for w in (q_proj_weight, k_proj_weight, v_proj_weight))


def _cached(kv_cache, k, v):
    """Every key and value so far: the new ones appended to the cache, as the reference does."""
    return (k, v) if kv_cache is None else kv_cache.update(k, v)


def _merge(out, o_proj_weight):
    return out.transpose(-3, -2).flatten(-2) @ o_proj_weight.T


def _mask(x, k, attention_mask, causal: bool = True):
    """The reference's mask over (queries, keys): causal (the queries are the last positions)
    and, with attention_mask, no padding key, for every head."""
    mask = F.causal_mask(x.shape[-2], k.shape[-2]) if causal else None
    if attention_mask is not None:
        keep = attention_mask[..., None, None, :]
        mask = keep if mask is None else mask & keep
    return mask


@mistake(
    "mha-no_causal_mask",
    F,
    "multihead_self_attention",
    diagnosis="self-attention without the causal mask (every position sees later tokens)",
)
def mha_no_causal_mask(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                       token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    return _merge(F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask, causal=False)), o_proj_weight)


def _split_heads_strided(t, d_k):
    return t.unflatten(-1, (d_k, -1)).transpose(-1, -2).transpose(-3, -2)  # head h takes columns h, h + H, ...


@mistake(
    "mha-heads_split_wrong",
    F,
    "multihead_self_attention",
    diagnosis="self-attention splitting d_model into (d_k, num_heads) instead of (num_heads, d_k)",
)
def mha_heads_split_wrong(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                          token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads, split=_split_heads_strided)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    return _merge(F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask)), o_proj_weight)


@mistake(
    "mha-kv_heads_tiled",
    F,
    "multihead_self_attention",
    diagnosis="grouped-query attention with query head h reading kv head h % num_kv_heads (tiled) instead of "
    "h // (num_heads / num_kv_heads)",
)
def mha_gqa_tiled_not_interleaved(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads,
                                  rope_cache=None, token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    group = num_heads // k.shape[-3]
    k, v = (t.repeat(*([1] * (t.dim() - 3)), group, 1, 1) for t in (k, v))  # repeat, not repeat_interleave
    return _merge(F.scaled_dot_product_attention(q, k, v, _mask(x, k, attention_mask)), o_proj_weight)


@mistake(
    "mha-rotary_on_values",
    F,
    "multihead_self_attention",
    diagnosis="self-attention rotating the values as well as the queries and keys",
)
def mha_rope_on_values(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                       token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads)
    q, k, v = _rotate(x, rope_cache, token_positions, kv_cache, q, k, v)
    k, v = _cached(kv_cache, k, v)
    return _merge(F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask)), o_proj_weight)


def _split_heads_without_transpose(t, d_k):
    return t.reshape(*t.shape[:-2], -1, t.shape[-2], d_k)  # (..., seq, H * d_k) read as (..., H, seq, d_k)


@mistake(
    "mha-heads_reshaped_without_transpose",
    F,
    "multihead_self_attention",
    diagnosis="self-attention splitting the heads with a reshape to (num_heads, seq, d_k) and no transpose "
    "(each head then mixes positions)",
)
def mha_heads_reshaped_without_transpose(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads,
                                         rope_cache=None, token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads, split=_split_heads_without_transpose)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    out = F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask))
    return out.reshape(*x.shape[:-1], -1) @ o_proj_weight.T  # merged back with the same reshape


@mistake(
    "mha-causal_mask_hides_the_diagonal",
    F,
    "causal_mask",
    diagnosis="a causal mask with j < i instead of j <= i: each position cannot see itself (and the first "
    "sees nothing)",
)
def causal_mask_strict(num_queries, num_keys, device=None):
    offset = num_keys - num_queries
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(diagonal=offset - 1)


@variant("mha-repeat_kv", F, "grouped_query_attention")
def gqa_repeat_kv(q, k, v, mask=None):
    # Hugging Face's repeat_kv: copy each key/value head for its group of query heads
    group = q.shape[-3] // k.shape[-3]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(group, -3), v.repeat_interleave(group, -3), mask)


alternative(
    "mha",
    "grouped_query_attention",
    """
    heads, kv_heads = q.shape[-3], k.shape[-3]
    per_group = heads // kv_heads
    outputs = []
    for h in range(heads):
        kv = h // per_group
        m = None
        if mask is not None:
            m = mask if mask.dim() < 3 or mask.shape[-3] == 1 else mask[..., h, :, :]
        outputs.append(scaled_dot_product_attention(q[..., h, :, :], k[..., kv, :, :], v[..., kv, :, :], m))
    return torch.stack(outputs, dim=-3)
    """,
)
