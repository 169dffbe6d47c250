"""Scaled dot-product attention, RoPE and multi-head self-attention: the builders of their inputs
(token positions and attention weights too, which the model's builders use), then their cases."""

import math
from functools import partial

import numpy as np
import torch
from torch import Tensor

from cs336_basics.staff.cases.case import BF16, F16, F64, Case
from cs336_basics.staff.cases.draw import Make, Rng, edited, linear_weight, rand, randn


def attention_case(
    batch: tuple[int, ...], queries: int, keys: int, d_k: int, d_v: int, mask: str = "none", scale: float = 1.0
) -> Make:
    """mask: "none"; "random" (True with probability 1/2, never a whole row: key 0 always
    allowed; not causal); "fully_masked_row" (random, and query 1 may attend to nothing)."""

    def make(rng):
        kw = dict(
            Q=randn(rng, *batch, queries, d_k, std=scale),
            K=randn(rng, *batch, keys, d_k, std=scale),
            V=randn(rng, *batch, keys, d_v),
        )
        if mask != "none":
            m = rand(rng, *batch, queries, keys) < 0.5  # (..., queries, keys)
            m[..., 0] = True
            if mask == "fully_masked_row":
                m[..., 1, :] = False
            kw["mask"] = m
        return kw

    return make


def draw_positions(rng: Rng, batch: tuple[int, ...], seq: int, max_seq_len: int, kind: str) -> Tensor | None:
    """ "arange": 0..seq-1; "none": not given (the module's default, arange); "random": distinct
    sorted positions anywhere below max_seq_len, drawn per batch entry (not arange: a left-padded
    or packed sequence); "shuffled": the same, in a random order (nothing says positions
    increase along the sequence); "end": the last seq positions before max_seq_len."""
    if kind == "none":
        return None
    if kind == "arange":
        return torch.arange(seq)
    if kind == "end":
        return torch.arange(max_seq_len - seq, max_seq_len)
    rows = [np.sort(rng.choice(max_seq_len, size=seq, replace=False)) for _ in range(int(np.prod(batch)))]
    if kind == "shuffled":
        rows = [rng.permutation(row) for row in rows]
    return torch.from_numpy(np.stack(rows).reshape(*batch, seq).astype(np.int64))


def rope_case(
    batch: tuple[int, ...],
    seq: int,
    d_k: int,
    theta: float,
    max_seq_len: int,
    positions: str = "arange",
    x_std: float = 1.0,
) -> Make:
    return lambda rng: dict(
        d_k=d_k,
        theta=theta,
        max_seq_len=max_seq_len,
        in_query_or_key=randn(rng, *batch, seq, d_k, std=x_std),
        token_positions=draw_positions(rng, batch, seq, max_seq_len, positions),
    )


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


scaled_dot_product_attention = partial(Case, component="attention", adapter="run_scaled_dot_product_attention")
rope = partial(Case, component="rope", adapter="run_rope")
multihead_self_attention = partial(Case, component="mha", adapter="run_multihead_self_attention")
multihead_self_attention_with_rope = partial(Case, component="mha", adapter="run_multihead_self_attention_with_rope")
multihead_self_attention_cached = partial(Case, component="mha", adapter="run_multihead_self_attention_cached")

OUTLIER = 100.0  # a query/key pair ~100x the others: the outlier features of LLMs (Dettmers et al. 2022)


def _outlier_pairs_rotated_onto_an_axis(kw: dict) -> None:
    """In batch entry 0 at sequence indices 1..8, pair 0 (angle = position, its frequency being
    theta^0 = 1) becomes OUTLIER * (sin p, cos p): rotated by p it is (0, OUTLIER), so its first
    output is 0 up to the rounding of x, and a cos or sin table rounded to x's dtype leaves
    ~OUTLIER * 2^-9 there, where the rest of the output has an RMS of ~OUTLIER / 20."""
    x, positions = kw["in_query_or_key"], kw["token_positions"]
    for i in range(1, 9):
        p = float(positions[i])
        x[0, i, 0], x[0, i, 1] = OUTLIER * math.sin(p), OUTLIER * math.cos(p)


CASES = [
    # attention: CS336's shapes (4 x 12 queries, 16 keys, d_k 64) with a mask that is not causal
    # (a causal-only implementation, or an inverted mask, fails) and a query that may attend to
    # nothing (its output is 0: a -1e9 fill instead of -inf averages V there); no mask; 4-D with d_v != d_k
    scaled_dot_product_attention(
        "attention_random_mask",
        seed=28,
        make=attention_case((4,), 12, 16, 64, 64, mask="fully_masked_row", scale=1.5),
        floor=2.2e-6,
    ),
    scaled_dot_product_attention(
        "attention_unmasked", seed=29, make=attention_case((2, 3), 10, 10, 16, 8, scale=2.0), floor=1.5e-6
    ),
    scaled_dot_product_attention(
        "attention_4d_f64", seed=117, make=attention_case((2, 2), 5, 6, 8, 8, mask="random"), floor=4.7e-16, dtype=F64
    ),
    scaled_dot_product_attention(
        "attention_2d_bf16",
        seed=118,
        make=attention_case((), 6, 9, 16, 16, mask="fully_masked_row"),
        floor=1.1e-2,
        dtype=BF16,
    ),
    # witness: float16 attention of one query over a context of 66000 keys (Llama 3.1 reads 128k)
    # with near-uniform scores: the softmax's sum of exps, ~66000, is past float16's largest finite
    # value (65504), so a softmax computed in float16 makes every probability 0 and the output 0;
    # in float32 each probability is ~1.5e-5 and the output is V's mean
    scaled_dot_product_attention(
        "attention_fp16_long_context",
        seed=165,
        make=attention_case((1,), 1, 66000, 2, 2, scale=0.01),
        floor=7.2e-4,
        dtype=F16,
    ),
    # hidden: a query that may attend to nothing (zeros, not NaN); 3-D bfloat16; one query
    scaled_dot_product_attention(
        "attention_fully_masked_row",
        hidden=True,
        seed=1101,
        make=attention_case((3,), 5, 7, 8, 8, mask="fully_masked_row", scale=1.5),
        floor=2.8e-7,
    ),
    scaled_dot_product_attention(
        "attention_bf16",
        hidden=True,
        seed=1102,
        make=attention_case((2, 2), 6, 9, 16, 16, mask="random", scale=1.5),
        floor=9.3e-3,
        dtype=BF16,
    ),
    scaled_dot_product_attention(
        "attention_one_query", hidden=True, seed=1103, make=attention_case((), 1, 13, 24, 5), floor=1.7e-7
    ),
    # rope: CS336's (4 x 12, d_k 64, theta 10000) at positions 0..11; per-row positions that are
    # not arange (a packed or left-padded batch) in a table of 1024
    rope("rope", seed=30, make=rope_case((4,), 12, 64, 10000.0, 2048), floor=1.2e-7),
    rope(
        "rope_positions_not_arange",
        seed=31,
        make=rope_case((2, 3), 9, 32, 10000.0, 1024, positions="random"),
        floor=1.4e-7,
    ),
    # positions out of order (nothing says they increase), Llama 3's theta
    rope(
        "rope_shuffled_positions_f64",
        seed=119,
        make=rope_case((3,), 8, 16, 500000.0, 64, positions="shuffled"),
        floor=1.5e-16,
        dtype=F64,
    ),
    rope("rope_unbatched_bf16", seed=120, make=rope_case((), 10, 32, 1000.0, 32), floor=2.7e-3, dtype=BF16),
    # witness: bfloat16 with outlier pairs whose rotation lands on an axis (see the edit): computed
    # in float32 from float32 tables that output is 0 to within its rounding, from tables rounded to
    # bfloat16 it is off by 5 % of the output's RMS (the handout's dtype policy for RoPE)
    rope(
        "rope_bf16_outlier_pairs",
        seed=164,
        make=edited(rope_case((4,), 12, 64, 10000.0, 2048), _outlier_pairs_rotated_onto_an_axis),
        floor=1.4e-3,
        dtype=BF16,
    ),
    # hidden: the last positions of an 8192 table with Llama 3's theta 500000; 2-D bfloat16; d_k 2
    rope(
        "rope_end_of_long_table",
        hidden=True,
        seed=1111,
        make=rope_case((2,), 6, 16, 500000.0, 8192, positions="end"),
        floor=6.7e-8,
    ),
    rope(
        "rope_bf16", hidden=True, seed=1112, make=rope_case((), 7, 24, 10000.0, 16, x_std=2.0), floor=0.0022, dtype=BF16
    ),
    rope(
        "rope_pair_random_positions",
        hidden=True,
        seed=1113,
        make=rope_case((5,), 4, 2, 100.0, 50, positions="random"),
        floor=3.5e-8,
    ),
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
    "attention": {
        "test_attention_matches_fixture": ("attention_random_mask", "attention_unmasked", "attention_4d_f64"),
        "test_attention_matches_torch_builtin_with_a_non_causal_mask": ("attention_random_mask",),
        "test_attention_matches_torch_builtin_without_mask": ("attention_unmasked",),
        "test_attention_adapter_matches_torch_builtin_in_float32": ("attention_random_mask", "attention_one_query"),
        "test_attention_mask_with_leading_dims_applies_per_batch_entry": ("attention_4d_f64",),
        "test_attention_fully_masked_query_gives_zeros_not_nan": ("attention_fully_masked_row",),
        "test_attention_bfloat16_is_as_accurate_as_the_builtin": ("attention_2d_bf16", "attention_bf16"),
        "test_attention_keeps_large_scores_finite": ("attention_bf16",),
        "test_attention_returns_queries_by_d_v_in_the_inputs_dtype": ("attention_4d_f64", "attention_unmasked"),
        "test_attention_weights_of_each_query_sum_to_one_over_the_keys": ("attention_unmasked", "attention_one_query"),
        "test_attention_divides_the_scores_by_the_root_of_d_k": ("attention_unmasked", "attention_one_query"),
        "test_attention_output_of_a_query_ignores_the_other_queries": ("attention_unmasked",),
        "test_attention_matches_the_formula_computed_by_hand": ("attention_unmasked", "attention_4d_f64"),
        "test_attention_permuting_the_keys_with_their_values_changes_nothing": ("attention_unmasked",),
        "test_attention_weights_of_the_allowed_keys_sum_to_one": ("attention_random_mask", "attention_4d_f64"),
        "test_attention_mask_true_means_may_attend": ("attention_random_mask", "attention_4d_f64"),
        "test_attention_with_a_partial_mask_matches_the_formula_over_the_allowed_keys": (
            "attention_random_mask",
            "attention_4d_f64",
        ),
        "test_attention_of_a_query_that_may_attend_to_nothing_is_zero": (
            "attention_fully_masked_row",
            "attention_random_mask",
        ),
        "test_attention_mask_with_leading_dimensions_applies_per_batch_entry": ("attention_4d_f64", "attention_bf16"),
        "test_attention_of_scores_near_1e4_is_finite": ("attention_bf16",),
        "test_attention_in_half_precision_sums_70000_keys_in_float32": ("attention_fp16_long_context",),
    },
    "rope": {
        "test_rope_buffers_stay_out_of_the_state_dict": ("rope", "rope_positions_not_arange"),
        "test_rope_matches_fixture": ("rope", "rope_positions_not_arange", "rope_shuffled_positions_f64"),
        "test_rope_kernel_matches_complex_rotation": ("rope_shuffled_positions_f64", "rope_pair_random_positions"),
        "test_rope_adapter_with_per_batch_positions": ("rope_positions_not_arange",),
        "test_rope_bfloat16_is_computed_in_float32": ("rope_unbatched_bf16", "rope_bf16"),
        "test_rope_position_zero_is_the_identity": ("rope", "rope_shuffled_positions_f64"),
        "test_rope_dot_product_depends_only_on_the_offset": ("rope_positions_not_arange", "rope_end_of_long_table"),
        "test_rope_returns_the_shape_and_dtype_of_x": ("rope", "rope_shuffled_positions_f64"),
        "test_rope_at_position_zero_is_the_identity": ("rope", "rope_shuffled_positions_f64"),
        "test_rope_keeps_the_length_of_every_pair": ("rope", "rope_shuffled_positions_f64"),
        "test_rope_rotates_a_pair_counter_clockwise_by_its_angle": ("rope_pair_random_positions", "rope"),
        "test_rope_rotates_adjacent_pairs": ("rope", "rope_shuffled_positions_f64"),
        "test_rope_rotates_pair_k_at_frequency_theta_to_the_minus_2k_over_d_k": ("rope", "rope_shuffled_positions_f64"),
        "test_rope_rotates_each_token_by_its_own_token_position": ("rope_shuffled_positions_f64",),
        "test_rope_takes_token_positions_per_batch_entry": ("rope_positions_not_arange",),
        "test_rope_computes_bfloat16_in_float32": ("rope_bf16_outlier_pairs", "rope_bf16"),
    },
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
    "test_rope_position_beyond_max_seq_len_raises": "the given argument check (_checks.rope)",
    "test_rope_cast_to_half_keeps_float64_tables": "module.to(dtype): the adapters build RoPE and never cast it",
    "test_mha_padding_mask_must_cover_the_cached_and_new_keys": "the given argument check (_checks.padding_mask)",
    "test_mha_causal_mask_is_built_on_the_given_device": "a device: the grader runs every case on the CPU",
    "test_mha_grouped_query_takes_a_mask_per_query_head": "a mask with a head dimension: no adapter passes one (the model's masks are per key)",
    "test_mha_kernel_splits_heads_by_the_query_projection_s_rows_not_d_model": (
        "no mha adapter passes d_q != d_model (MultiHeadSelfAttention builds d_q = d_model); the split attention's "
        "graded cases (parallel_heads_*, parallel_model_*) run the kernel with one rank's d_q rows"
    ),
}
