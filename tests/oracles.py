"""Independent oracles: each adapter's computation written with PyTorch's built-ins.
None of this is our code path; the reference must agree with it."""

import torch
import torch.nn.functional as TF

ACTIVATIONS = {
    "silu": TF.silu,
    "gelu": TF.gelu,
    "gelu_tanh": lambda x: TF.gelu(x, approximate="tanh"),
    "relu": TF.relu,
}


def swiglu_ffn(x, w1, w2, w3, activation="silu"):
    """W2(act(W1 x) * W3 x) with F.linear, like functional.swiglu_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1)) * TF.linear(x, w3), w2)


def positionwise_ffn(x, w1, b1, w2, b2, activation="gelu"):
    """act(x W1^T + b1) W2^T + b2 with F.linear, like functional.positionwise_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1, b1)), w2, b2)


def _ffn_block(d_model, d_ff, weights, in_features, norm="rmsnorm", ffn="swiglu", activation="silu", eps=1e-5, bias=False):
    w, x = weights, in_features
    if norm == "rmsnorm":
        h = TF.rms_norm(x, (d_model,), w["ffn_norm.weight"], eps)
    else:
        h = TF.layer_norm(x, (d_model,), w["ffn_norm.weight"], w.get("ffn_norm.bias"), eps)
    if ffn == "swiglu":
        h = swiglu_ffn(h, w["feed_forward.w1.weight"], w["feed_forward.w2.weight"], w["feed_forward.w3.weight"], activation)
    else:
        h = positionwise_ffn(h, w["feed_forward.w1.weight"], w.get("feed_forward.b1"), w["feed_forward.w2.weight"],
                             w.get("feed_forward.b2"), activation)
    return x + h


def sdpa(Q, K, V, mask=None):
    """torch's fused scaled dot-product attention (a fully masked row gives NaN there)."""
    return TF.scaled_dot_product_attention(Q, K, V, attn_mask=mask)


def rope_complex(x, theta, token_positions):
    """RoPE as Meta's llama writes it: adjacent pairs as complex numbers, times e^{i angle}
    (llama/model.py, precompute_freqs_cis and apply_rotary_emb), in float64."""
    d = x.shape[-1]
    freqs = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = token_positions.to(torch.float64)[..., None] * freqs  # (..., seq, d/2)
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).flatten(-2).to(x.dtype)


def mha(x, wq, wk, wv, wo, num_heads, rope_fn=None, token_positions=None):
    """Causal multi-head self-attention from F.linear and F.scaled_dot_product_attention
    (is_causal, enable_gqa); rope_fn(t, positions) rotates q and k if given."""
    d_k = wq.shape[0] // num_heads
    q = TF.linear(x, wq).unflatten(-1, (num_heads, d_k)).transpose(-3, -2)
    k = TF.linear(x, wk).unflatten(-1, (wk.shape[0] // d_k, d_k)).transpose(-3, -2)
    v = TF.linear(x, wv).unflatten(-1, (wv.shape[0] // d_k, d_k)).transpose(-3, -2)
    if rope_fn is not None:
        pos = torch.arange(x.shape[-2]) if token_positions is None else token_positions
        q, k = rope_fn(q, pos.unsqueeze(-2)), rope_fn(k, pos.unsqueeze(-2))
    out = TF.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return TF.linear(out.transpose(-3, -2).flatten(-2), wo)


ORACLES = {
    "run_linear": lambda d_in, d_out, weights, in_features: TF.linear(in_features, weights),
    "run_embedding": lambda vocab_size, d_model, weights, token_ids: TF.embedding(token_ids, weights),
    "run_silu": lambda in_features: TF.silu(in_features),
    "run_gelu": lambda in_features, approximate="none": TF.gelu(in_features, approximate=approximate),
    "run_softmax": lambda in_features, dim: TF.softmax(in_features, dim=dim),
    "run_rmsnorm": lambda d_model, eps, weights, in_features: TF.rms_norm(in_features, (d_model,), weights, eps),
    "run_layernorm": lambda d_model, eps, weights, biases, in_features: TF.layer_norm(in_features, (d_model,), weights, biases, eps),
    "run_swiglu": lambda d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features: swiglu_ffn(
        in_features, w1_weight, w2_weight, w3_weight
    ),
    "run_positionwise_feedforward": lambda d_model, d_ff, w1_weight, b1, w2_weight, b2, in_features, activation="gelu": (
        positionwise_ffn(in_features, w1_weight, b1, w2_weight, b2, activation)
    ),
    "run_ffn_block": _ffn_block,
    "run_scaled_dot_product_attention": lambda Q, K, V, mask=None: sdpa(Q, K, V, mask),
    "run_rope": lambda d_k, theta, max_seq_len, in_query_or_key, token_positions: rope_complex(
        in_query_or_key, theta, token_positions
    ),
    "run_multihead_self_attention": lambda d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight,
    o_proj_weight, in_features: mha(in_features, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads),
    "run_multihead_self_attention_with_rope": lambda d_model, num_heads, max_seq_len, theta, q_proj_weight,
    k_proj_weight, v_proj_weight, o_proj_weight, in_features, token_positions=None: mha(
        in_features, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads,
        lambda t, p: rope_complex(t, theta, p), token_positions,
    ),
}
