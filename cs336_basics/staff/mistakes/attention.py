"""Scaled dot-product attention, RoPE and multi-head self-attention: their mistakes, accepted variants
and alternative solutions."""

import math

import torch

from cs336_basics.nn import functional as F

from . import alternative, mistake, up, variant

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
