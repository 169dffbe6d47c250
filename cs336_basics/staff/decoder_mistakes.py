"""Plausible student mistakes in the decoder components, each a wrong kernel with the signature
of the correct one in cs336_basics.nn.functional and a one-line diagnosis, for the mistake
catalogue (tests/test_mistake_catalogue.py swaps a kernel and checks that some case fails).
Not wired in yet: the case registry they will run against is being rewritten."""

import math

import torch

from cs336_basics.nn import functional as F

# --- attention (scaled_dot_product_attention) -------------------------------------------------


def sdpa_mask_inverted(Q, K, V, mask=None):
    """Mask polarity inverted: True treated as 'blocked' (masked_fill(mask, -inf))."""
    s = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    return F.softmax(s, -1) @ V


def sdpa_scale_by_d_k(Q, K, V, mask=None):
    """Scores divided by d_k instead of sqrt(d_k)."""
    s = Q @ K.transpose(-1, -2) / Q.shape[-1]
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return F.softmax(s, -1) @ V


def sdpa_softmax_over_queries(Q, K, V, mask=None):
    """Softmax over the query axis (dim=-2) instead of the key axis."""
    s = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(F.softmax(s, -2)) @ V


def sdpa_mask_after_softmax(Q, K, V, mask=None):
    """Mask applied by zeroing probabilities after the softmax: rows no longer sum to 1."""
    p = F.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), -1)
    if mask is not None:
        p = p * mask
    return p @ V


def sdpa_no_scale(Q, K, V, mask=None):
    """No 1/sqrt(d_k) scaling at all."""
    s = Q @ K.transpose(-1, -2)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return F.softmax(s, -1) @ V


# --- rope --------------------------------------------------------------------------------------


def _angles(x, cos, sin, token_positions):
    return cos[token_positions].to(x.dtype), sin[token_positions].to(x.dtype)


def rope_rotate_halves(x, cos, sin, token_positions):
    """Rotates halves (x_k with x_{k+d/2}, Hugging Face's rotate_half) instead of adjacent pairs."""
    c, s = _angles(x, cos, sin, token_positions)
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)


def rope_ignores_positions(x, cos, sin, token_positions):
    """Uses 0..seq-1 whatever token_positions says."""
    return F.rope(x, cos, sin, torch.arange(x.shape[-2]))


def rope_sign_flipped(x, cos, sin, token_positions):
    """Rotates by -angle (sin sign swapped between the two outputs)."""
    return F.rope(x, cos, -sin, token_positions)


def rope_frequency_uses_k_not_2k(x, cos, sin, token_positions):
    """Frequencies theta^(-k/d_k) instead of theta^(-2k/d_k) (the pair index not doubled)."""
    inv_freq = torch.acos(cos[1].clamp(-1, 1))  # position 1's angles: theta^(-2k/d_k), all in [0, 1]
    angles = token_positions.to(torch.float64)[..., None] * inv_freq.sqrt()  # theta^(-k/d_k)
    return _rope_with_angles(x, angles)


def _rope_with_angles(x, ang):
    c, s = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    p = x.unflatten(-1, (-1, 2))
    x0, x1 = p[..., 0], p[..., 1]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), -1).flatten(-2)


# --- mha -----------------------------------------------------------------------------------------


def mha_no_causal_mask(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                       token_positions=None, kv_cache=None):  # fmt: skip
    """No causal mask: every position sees the future."""
    d_k = q_proj_weight.shape[0] // num_heads
    q = (x @ q_proj_weight.T).unflatten(-1, (num_heads, d_k)).transpose(-3, -2)
    k = (x @ k_proj_weight.T).unflatten(-1, (-1, d_k)).transpose(-3, -2)
    v = (x @ v_proj_weight.T).unflatten(-1, (-1, d_k)).transpose(-3, -2)
    if rope_cache is not None:
        pos = torch.arange(x.shape[-2]) if token_positions is None else token_positions
        q, k = F.rope(q, *rope_cache, pos.unsqueeze(-2)), F.rope(k, *rope_cache, pos.unsqueeze(-2))
    out = F.grouped_query_attention(q, k, v, None)
    return out.transpose(-3, -2).flatten(-2) @ o_proj_weight.T


def mha_heads_split_wrong(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                          token_positions=None, kv_cache=None):  # fmt: skip
    """Heads split as (d_k, num_heads) instead of (num_heads, d_k): each head mixes strided columns."""
    d_k = q_proj_weight.shape[0] // num_heads
    split = lambda t, h: t.unflatten(-1, (d_k, h)).transpose(-1, -2).transpose(-3, -2)  # noqa: E731
    q, k, v = split(x @ q_proj_weight.T, num_heads), split(x @ k_proj_weight.T, k_proj_weight.shape[0] // d_k), split(x @ v_proj_weight.T, v_proj_weight.shape[0] // d_k)
    if rope_cache is not None:
        pos = torch.arange(x.shape[-2]) if token_positions is None else token_positions
        q, k = F.rope(q, *rope_cache, pos.unsqueeze(-2)), F.rope(k, *rope_cache, pos.unsqueeze(-2))
    out = F.grouped_query_attention(q, k, v, F.causal_mask(x.shape[-2], x.shape[-2]))
    return out.transpose(-3, -2).flatten(-2) @ o_proj_weight.T


def mha_gqa_tiled_not_interleaved(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads,
                                  rope_cache=None, token_positions=None, kv_cache=None):  # fmt: skip
    """GQA with kv heads repeated by tiling (repeat) rather than repeat_interleave: query head h
    uses kv head h % num_kv_heads instead of h // group."""
    d_k = q_proj_weight.shape[0] // num_heads
    q = (x @ q_proj_weight.T).unflatten(-1, (num_heads, d_k)).transpose(-3, -2)
    k = (x @ k_proj_weight.T).unflatten(-1, (-1, d_k)).transpose(-3, -2)
    v = (x @ v_proj_weight.T).unflatten(-1, (-1, d_k)).transpose(-3, -2)
    if rope_cache is not None:
        pos = torch.arange(x.shape[-2]) if token_positions is None else token_positions
        q, k = F.rope(q, *rope_cache, pos.unsqueeze(-2)), F.rope(k, *rope_cache, pos.unsqueeze(-2))
    group = num_heads // k.shape[-3]
    k, v = k.repeat(*([1] * (k.dim() - 3)), group, 1, 1), v.repeat(*([1] * (v.dim() - 3)), group, 1, 1)
    out = F.scaled_dot_product_attention(q, k, v, F.causal_mask(x.shape[-2], x.shape[-2]))
    return out.transpose(-3, -2).flatten(-2) @ o_proj_weight.T


def mha_rope_on_values(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                       token_positions=None, kv_cache=None):  # fmt: skip
    """RoPE applied to the values as well as queries and keys."""
    d_k = q_proj_weight.shape[0] // num_heads
    q = (x @ q_proj_weight.T).unflatten(-1, (num_heads, d_k)).transpose(-3, -2)
    k = (x @ k_proj_weight.T).unflatten(-1, (-1, d_k)).transpose(-3, -2)
    v = (x @ v_proj_weight.T).unflatten(-1, (-1, d_k)).transpose(-3, -2)
    if rope_cache is not None:
        pos = (torch.arange(x.shape[-2]) if token_positions is None else token_positions).unsqueeze(-2)
        q, k, v = (F.rope(t, *rope_cache, pos) for t in (q, k, v))
    out = F.grouped_query_attention(q, k, v, F.causal_mask(x.shape[-2], x.shape[-2]))
    return out.transpose(-3, -2).flatten(-2) @ o_proj_weight.T


# --- block and lm (as forward functions of the modules) --------------------------------------------


def block_post_norm(block, x, token_positions=None, kv_cache=None):
    """Post-norm (Vaswani et al. 2017): norm(x + attn(x)) instead of x + attn(norm(x))."""
    h = block.ln1(x + block.attn(x, token_positions, kv_cache))
    return block.ln2(h + block.ffn(h))


def block_single_residual(block, x, token_positions=None, kv_cache=None):
    """The FFN reads ln2 of the block input x, not of h = x + attn(...) (parallel-block by accident)."""
    h = x + block.attn(block.ln1(x), token_positions, kv_cache)
    return h + block.ffn(block.ln2(x))


def block_norms_swapped(block, x, token_positions=None, kv_cache=None):
    """ln1 and ln2 swapped (each sub-layer normalised with the other's gain)."""
    h = x + block.attn(block.ln2(x), token_positions, kv_cache)
    return h + block.ffn(block.ln1(h))


def lm_no_final_norm(model, in_indices, token_positions=None, kv_cache=None):
    """ln_final skipped before the output head."""
    x = model.token_embeddings(in_indices)
    for layer in model.layers:
        x = layer(x, token_positions)
    head = model.token_embeddings.weight if model.lm_head is None else model.lm_head.weight
    return F.linear(x, head)


def lm_softmax_output(model, in_indices, token_positions=None, kv_cache=None):
    """Returns probabilities (softmax of the logits) instead of logits."""
    x = model.token_embeddings(in_indices)
    for layer in model.layers:
        x = layer(x, token_positions)
    head = model.token_embeddings.weight if model.lm_head is None else model.lm_head.weight
    return F.softmax(F.linear(model.ln_final(x), head), -1)


def lm_positions_start_at_one(model, in_indices, token_positions=None, kv_cache=None):
    """Positions start at 1 instead of 0 (off by one in RoPE)."""
    pos = torch.arange(1, in_indices.shape[-1] + 1)
    x = model.token_embeddings(in_indices)
    for layer in model.layers:
        x = layer(x, pos)
    head = model.token_embeddings.weight if model.lm_head is None else model.lm_head.weight
    return F.linear(model.ln_final(x), head)


# --- generate ---------------------------------------------------------------------------------------


def generate_cache_positions_restart(model, ids, n):
    """With a KV cache, each new token is fed at position 0 (token_positions not offset by the cache length)."""
    cache = model.new_kv_cache(len(ids) + n)
    logits = model(torch.tensor([ids]), kv_cache=cache)[:, -1]
    out = []
    for _ in range(n):
        tok = logits.argmax(-1)
        out.append(int(tok))
        logits = model(tok[:, None], token_positions=torch.tensor([0]), kv_cache=cache)[:, -1]
    return out


def generate_samples_from_first_position(model, ids, n):
    """Picks the next token from the logits of position 0 instead of the last position."""
    ids = list(ids)
    for _ in range(n):
        ids.append(int(model(torch.tensor([ids]))[0, 0].argmax()))
    return ids[-n:]
