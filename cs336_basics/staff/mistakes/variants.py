"""Accepted variants: correct implementations written differently. Each must pass every case,
which shows the tolerances are not tighter than the arithmetic allows."""

import math

import torch

import cs336_basics.generation.generate as generation
from cs336_basics.nn import functional as F

from . import plus_bias, up, variant


@variant("linear-matmul", F, "linear")
def linear_matmul(x, weight, bias=None):
    return plus_bias(x @ weight.transpose(-1, -2), bias)


@variant("silu-stable_sigmoid_by_sign", F, "silu")
def silu_stable_sigmoid_by_sign(x):
    # the sigmoid from exp(-|x|), which never overflows (nor does its gradient): 1 / (1 + e) for
    # x >= 0, e / (1 + e) below
    x_c = up(x)
    e = torch.exp(-x_c.abs())
    return (x_c * torch.where(x_c >= 0, 1 / (1 + e), e / (1 + e))).to(x.dtype)


@variant("gelu-one_plus_erf", F, "gelu")
def gelu_one_plus_erf(x, approximate="none"):
    # the paper's 0.5 x (1 + erf(x / sqrt 2)), as torch's F.gelu computes it: 1 + erf cancels to 0
    # for x << 0 (-0.0 at x = -10, where the exact value is -7.6e-23), a loss of 1e-22 on the scale
    # of any input that is not all in the far tail
    if approximate == "tanh":
        x_c = up(x)
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c.pow(3))
        return (0.5 * x_c * (1 + torch.tanh(u))).to(x.dtype)
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2.0)))).to(x.dtype)


@variant("softmax-logsumexp", F, "softmax")
def softmax_logsumexp(x, dim=-1):
    # exp(x - logsumexp(x)); a fully masked row's logsumexp is taken over zeros instead, so no
    # -inf row reaches it (its output exp(-inf) = 0, its gradient 0)
    x_c = up(x)
    dead = torch.isneginf(x_c).all(dim, keepdim=True)
    lse = torch.logsumexp(x_c.masked_fill(dead, 0.0), dim, keepdim=True)
    return torch.exp(x_c - lse).to(x.dtype)


@variant("rmsnorm-meta_cast_order", F, "rmsnorm")
def rmsnorm_meta_cast_order(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    normed = (x_c / torch.sqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return normed * weight.to(x.dtype)  # Meta / Hugging Face: cast, then multiply by the gain


@variant("layernorm-torch_var", F, "layernorm")
def layernorm_torch_var(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean, var = x_c.mean(-1, keepdim=True), x_c.var(-1, keepdim=True, unbiased=False)
    out = (x_c - mean) / torch.sqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


@variant("swiglu-matmuls", F, "swiglu_ffn")
def swiglu_in_three_lines(x, w1, w2, w3, activation="silu"):
    gate = x @ w1.T
    if activation == "silu":
        gate = gate * torch.sigmoid(up(gate)).to(gate.dtype)  # SiLU, sigmoid in float32 (float64 kept)
    else:  # the gate's other nonlinearities (GeGLU, ...): this variant is about the matmuls
        gate = F.get_activation(activation)(gate)
    return (gate * (x @ w3.T)) @ w2.T


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


@variant("rope-complex_multiplication", F, "rope")
def rope_complex_multiplication(x, cos, sin, token_positions):
    # Meta's llama apply_rotary_emb: adjacent pairs as complex numbers times e^{i angle}
    dtype = up(x).dtype
    rot = torch.complex(cos[token_positions].to(dtype), sin[token_positions].to(dtype))  # (..., seq, d_k/2)
    z = torch.view_as_complex(up(x).reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(z * rot).flatten(-2).to(x.dtype)


@variant("mha-repeat_kv", F, "grouped_query_attention")
def gqa_repeat_kv(q, k, v, mask=None):
    # Hugging Face's repeat_kv: copy each key/value head for its group of query heads
    group = q.shape[-3] // k.shape[-3]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(group, -3), v.repeat_interleave(group, -3), mask)


_generate = generation.generate  # the right one, kept before any patching


@variant("generate-without_cache", generation, "generate")
def generate_recomputing_everything(*args, **kwargs):
    # no KV cache: the whole sequence runs again at every step
    return _generate(*args, **{**kwargs, "use_cache": False})
