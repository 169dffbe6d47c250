"""Scaled dot-product attention and RoPE: the builders of their inputs (token positions too, which
the model's builders use), then their cases and what they grade of the public tests, then their
mistakes, accepted variants and alternative solutions."""

import math
from functools import partial

import numpy as np
import torch
from torch import Tensor

from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.case import BF16, F16, F64, Case
from cs336_basics.staff.cases.draw import Make, Rng, edited, rand, randn
from cs336_basics.staff.mistakes import alternative, mistake, up, variant


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


scaled_dot_product_attention = partial(Case, component="attention", adapter="run_scaled_dot_product_attention")
rope = partial(Case, component="rope", adapter="run_rope")


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
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_rope_position_beyond_max_seq_len_raises": "the given argument check (_checks.rope)",
    "test_rope_cast_to_half_keeps_float64_tables": "module.to(dtype): the adapters build RoPE and never cast it",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- attention (scaled_dot_product_attention) ----------------------------------------------------


def _masked(scores, blocked):
    return scores if blocked is None else scores.masked_fill(blocked, float("-inf"))


def _blocked(mask):
    return None if mask is None else ~mask


@mistake(
    "attention-mask_inverted",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention treating True in the mask as blocked (masked_fill(mask, -inf) instead of ~mask)",
)
def sdpa_mask_inverted(Q, K, V, mask=None):
    return F.softmax(_masked(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), mask), -1) @ V


@mistake(
    "attention-scaled_by_d_k",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention dividing the scores by d_k instead of sqrt(d_k)",
)
def sdpa_scale_by_d_k(Q, K, V, mask=None):
    return F.softmax(_masked(Q @ K.transpose(-1, -2) / Q.shape[-1], _blocked(mask)), -1) @ V


@mistake(
    "attention-large_negative_fill",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention filling masked scores with -1e9 instead of -inf (a query that may attend to nothing "
    "gets the mean of V instead of 0)",
)
def sdpa_large_negative_fill(Q, K, V, mask=None):
    s = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    s = s if mask is None else s.masked_fill(~mask, -1e9)
    return F.softmax(s, -1) @ V


@mistake(
    "attention-normalised_over_queries",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention with the softmax over the queries (dim=-2) instead of over the keys (dim=-1)",
)
def sdpa_softmax_over_queries(Q, K, V, mask=None):
    s = _masked(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), _blocked(mask))
    return torch.nan_to_num(F.softmax(s, -2)) @ V


@mistake(
    "attention-mask_after_normalising",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention zeroing masked probabilities after the softmax (the rows no longer sum to 1)",
)
def sdpa_mask_after_softmax(Q, K, V, mask=None):
    p = F.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), -1)
    return (p if mask is None else p * mask) @ V


@mistake(
    "attention-no_scaling",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention without the 1/sqrt(d_k) scaling of the scores",
)
def sdpa_no_scale(Q, K, V, mask=None):
    return F.softmax(_masked(Q @ K.transpose(-1, -2), _blocked(mask)), -1) @ V


@mistake(
    "attention-scores_normalised_in_half_precision",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention with its softmax computed in the input's 16-bit dtype (over more than 65504 keys the "
    "float16 sum of exps is inf): compute the scores' softmax in float32 (your softmax does)",
)
def sdpa_softmax_in_half(Q, K, V, mask=None):
    scores = _masked(Q * (1.0 / math.sqrt(Q.shape[-1])) @ K.transpose(-1, -2), _blocked(mask))  # not upcast
    return _softmax_in_input_dtype(scores) @ V


def _softmax_in_input_dtype(s):
    """The reference's softmax over the last dimension, with its upcast deleted."""
    e = torch.exp(s - s.amax(-1, keepdim=True).clamp(min=torch.finfo(s.dtype).min))
    return e * e.sum(-1, keepdim=True).clamp(min=torch.finfo(s.dtype).tiny).reciprocal()


@variant("attention-scaled_queries_logsumexp", F, "scaled_dot_product_attention")
def attention_scaled_queries_logsumexp(Q, K, V, mask=None):
    # Q / sqrt(d_k) before the product, softmax as exp(s - logsumexp(s)); a fully masked row -> zeros
    dtype = up(Q).dtype
    scores = (up(Q) * Q.shape[-1] ** -0.5) @ up(K).transpose(-1, -2)
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=dtype))
    lse = torch.logsumexp(scores, -1, keepdim=True)
    probs = torch.where(torch.isneginf(lse), torch.zeros_like(scores), torch.exp(scores - lse))
    return probs.to(V.dtype) @ V


alternative(
    "attention",
    "scaled_dot_product_attention",
    """
    work = torch.float64 if Q.dtype == torch.float64 else torch.float32
    logits = Q.to(work) @ K.to(work).transpose(-2, -1)
    logits = logits / math.sqrt(K.size(-1))
    if mask is not None:
        logits = torch.where(mask, logits, torch.full_like(logits, -math.inf))
    weights = softmax(logits, dim=-1)
    return weights.to(V.dtype) @ V
    """,
)


# ---- rope ----------------------------------------------------------------------------------------


_rope = F.rope  # the correct kernel, for mistakes that call it while F.rope is replaced


def _rope_with_tables(x, c, s):
    """Adjacent pairs rotated by the gathered tables c, s (..., seq, d_k/2), in x's dtype."""
    p = x.unflatten(-1, (-1, 2))
    x0, x1 = p[..., 0], p[..., 1]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), -1).flatten(-2)


def _rope_with_angles(x, ang):
    return _rope_with_tables(x, ang.cos().to(x.dtype), ang.sin().to(x.dtype))


@mistake(
    "rope-rotates_halves",
    F,
    "rope",
    diagnosis="RoPE pairing x[k] with x[k + d_k/2] (Hugging Face's rotate_half) instead of adjacent pairs "
    "(x[2k], x[2k+1])",
)
def rope_rotate_halves(x, cos, sin, token_positions):
    c, s = cos[token_positions].to(x.dtype), sin[token_positions].to(x.dtype)
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)


@mistake(
    "rope-ignores_token_positions",
    F,
    "rope",
    diagnosis="RoPE at positions 0, 1, ..., seq-1 whatever token_positions says",
)
def rope_ignores_positions(x, cos, sin, token_positions):
    return _rope(x, cos, sin, torch.arange(x.shape[-2]))


@mistake(
    "rope-rotates_backwards",
    F,
    "rope",
    diagnosis="RoPE rotating by minus the angle (the signs of the sin terms swapped)",
)
def rope_sign_flipped(x, cos, sin, token_positions):
    return _rope(x, cos, -sin, token_positions)


@mistake(
    "rope-frequency_exponent_k_not_2k",
    F,
    "rope",
    diagnosis="RoPE with frequencies theta^(-k/d_k) instead of theta^(-2k/d_k) for pair k",
)
def rope_frequency_uses_k_not_2k(x, cos, sin, token_positions):
    inv_freq = torch.acos(cos[1].double().clamp(-1, 1))  # position 1's angles: theta^(-2k/d_k), all in [0, 1]
    angles = token_positions.to(torch.float64)[..., None] * inv_freq.sqrt()  # theta^(-k/d_k)
    return _rope_with_angles(x, angles)


@mistake(
    "rope-no_float32_upcast",
    F,
    "rope",
    diagnosis="RoPE computed in the input's 16-bit dtype (cos and sin rounded to bfloat16): gather the tables "
    "in float32, rotate in float32, cast back once",
)
def rope_no_upcast(x, cos, sin, token_positions):
    # the reference with its upcast deleted
    return _rope_with_tables(x, cos[token_positions].to(x.dtype), sin[token_positions].to(x.dtype))


@variant("rope-complex_multiplication", F, "rope")
def rope_complex_multiplication(x, cos, sin, token_positions):
    # Meta's llama apply_rotary_emb: adjacent pairs as complex numbers times e^{i angle}
    dtype = up(x).dtype
    rot = torch.complex(cos[token_positions].to(dtype), sin[token_positions].to(dtype))  # (..., seq, d_k/2)
    z = torch.view_as_complex(up(x).reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(z * rot).flatten(-2).to(x.dtype)


alternative(
    "rope",
    "rope",
    """
    c = cos[token_positions]
    s = sin[token_positions]
    work = x.double() if x.dtype == torch.float64 else x.float()
    evens, odds = work[..., 0::2], work[..., 1::2]
    result = torch.empty_like(work)
    result[..., 0::2] = evens * c.type_as(work) - odds * s.type_as(work)
    result[..., 1::2] = evens * s.type_as(work) + odds * c.type_as(work)
    return result.type_as(x)
    """,
)
