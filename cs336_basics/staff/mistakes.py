"""The mistake catalogue: plausible wrong implementations of the kernels, each with a diagnosis
in words, and correct implementations written differently (the accepted variants).

Staff only. The fixture generator stores, for every public case a mistake fails, a fingerprint
of the mistake's output (make_fixtures.py), so a student's failing output can be named
("your output equals what RMSNorm with epsilon outside the square root gives") without
shipping any of this code. tests/staff/test_mistake_catalogue.py checks that every mistake
fails a case and is named there, and that every variant passes every case.
"""

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

import cs336_basics.generate as generation
from cs336_basics.nn import FFNBlock, TransformerBlock, TransformerLM, convert
from cs336_basics.nn import functional as F
from cs336_basics.nn.parallel import ParallelSwiGLUFFN, RowParallelLinear, comm
from cs336_basics.nn.parallel import column as parallel_column
from cs336_basics.nn.parallel import row as parallel_row


def up(x):
    return x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)


# ---- wrong implementations -------------------------------------------------------------


def _plus(y, bias):
    return y if bias is None else y + bias


def linear_transposed(x, weight, bias=None):
    return _plus(x @ weight, bias)  # W instead of W^T


def linear_with_stray_bias(x, weight, bias=None):
    # torch.nn.Linear's default bias, left in and never loaded: U(-1/sqrt(d_in), 1/sqrt(d_in))
    g = torch.Generator().manual_seed(0)
    bound = 1 / math.sqrt(weight.shape[1])
    stray = (torch.rand(weight.shape[0], generator=g) * 2 - 1) * bound
    return _plus(x @ weight.T + stray.to(x.dtype), bias)


def linear_only_3d(x, weight, bias=None):
    return _plus(torch.einsum("bsi,oi->bso", x, weight), bias)  # crashes on 2-D or 4-D input


def embedding_off_by_one(token_ids, weight):
    return weight[token_ids - 1]


def embedding_one_hot_matmul_in_input_dtype(token_ids, weight):
    one_hot = torch.nn.functional.one_hot(token_ids, weight.shape[0]).to(torch.bfloat16)
    return (one_hot @ weight.to(torch.bfloat16)).to(weight.dtype)  # rounds the rows to bf16


def silu_is_sigmoid(x):
    return torch.sigmoid(x)


def silu_is_gelu(x):
    return F.gelu(x)


def silu_as_exp_ratio(x):
    return x * torch.exp(x) / (1 + torch.exp(x))  # inf / inf = NaN for large x


def silu_is_relu(x):
    return torch.relu(x)


def gelu_always_tanh(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x_c + 0.044715 * x_c**3)))).to(x.dtype)


def gelu_always_exact(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2)))).to(x.dtype)


def gelu_sigmoid_approximation(x, approximate="none"):
    x_c = up(x)
    return (x_c * torch.sigmoid(1.702 * x_c)).to(x.dtype)


def softmax_without_max_subtraction(x, dim=-1):
    e = torch.exp(up(x))
    return (e / e.sum(dim, keepdim=True)).to(x.dtype)


def softmax_always_last_dim(x, dim=-1):
    return torch.softmax(x, dim=-1)


def softmax_divides_by_max(x, dim=-1):
    e = torch.exp(up(x) - up(x).amax(dim, keepdim=True))
    return (e / e.amax(dim, keepdim=True)).to(x.dtype)


def rmsnorm_eps_outside_sqrt(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c / (x_c.pow(2).mean(-1, keepdim=True).sqrt() + eps) * up(weight)).to(x.dtype)


def rmsnorm_no_upcast(x, weight, eps=1e-5, cast_before_gain=False):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rmsnorm_is_layernorm(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    x_c = x_c - x_c.mean(-1, keepdim=True)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


def rmsnorm_missing_gain(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rmsnorm_sum_not_mean(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).sum(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


def rmsnorm_over_whole_tensor(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean() + eps) * up(weight)).to(x.dtype)


def rmsnorm_eps_ignored(x, weight, eps=1e-5, cast_before_gain=False):
    return _rmsnorm(x, weight, 1e-5)  # the eps argument never reaches the kernel


def _rmsnorm(x, weight, eps):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


def layernorm_unbiased_variance(x, weight, bias, eps=1e-5):
    x_c = up(x)
    out = (x_c - x_c.mean(-1, keepdim=True)) * torch.rsqrt(x_c.var(-1, keepdim=True, unbiased=True) + eps)
    return (out * up(weight) + (0 if bias is None else up(bias))).to(x.dtype)


def layernorm_no_centering(x, weight, bias, eps=1e-5):
    return (up(_rmsnorm(x, weight, eps)) + (0 if bias is None else up(bias))).to(x.dtype)


def layernorm_missing_bias(x, weight, bias, eps=1e-5):
    return torch.nn.functional.layer_norm(up(x), x.shape[-1:], up(weight), None, eps).to(x.dtype)


def layernorm_no_upcast(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def swiglu_w1_w3_swapped(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w3)) * F.linear(x, w1), w2)


def swiglu_silu_on_up_branch_too(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1)) * F.silu(F.linear(x, w3)), w2)


def swiglu_gelu_for_silu(x, w1, w2, w3, activation="silu"):
    return F.linear(F.gelu(F.linear(x, w1)) * F.linear(x, w3), w2)


def swiglu_sigmoid_for_silu(x, w1, w2, w3, activation="silu"):
    return F.linear(torch.sigmoid(F.linear(x, w1)) * F.linear(x, w3), w2)


def swiglu_without_gate(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1)), w2)


def swiglu_silu_after_product(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1) * F.linear(x, w3)), w2)


def positionwise_ignores_biases(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.gelu(F.linear(x, w1)), w2)


def positionwise_relu_for_gelu(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.relu(F.linear(x, w1) + b1), w2) + b2


def positionwise_bias_after_activation(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.gelu(F.linear(x, w1)) + b1, w2) + b2


def block_post_norm(self, x):
    return self.ffn_norm(x + self.feed_forward(x))


def block_no_residual(self, x):
    return self.feed_forward(self.ffn_norm(x))


def block_residual_of_normed_input(self, x):
    h = self.ffn_norm(x)
    return h + self.feed_forward(h)


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


_rope = F.rope  # the correct kernel, for mistakes that call it while F.rope is replaced


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
    return _rope(x, cos, sin, torch.arange(x.shape[-2]))


def rope_sign_flipped(x, cos, sin, token_positions):
    """Rotates by -angle (sin sign swapped between the two outputs)."""
    return _rope(x, cos, -sin, token_positions)


def rope_frequency_uses_k_not_2k(x, cos, sin, token_positions):
    """Frequencies theta^(-k/d_k) instead of theta^(-2k/d_k) (the pair index not doubled)."""
    inv_freq = torch.acos(cos[1].double().clamp(-1, 1))  # position 1's angles: theta^(-2k/d_k), all in [0, 1]
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


def decoder_block_post_norm(block, x, token_positions=None, kv_cache=None):
    """Post-norm (Vaswani et al. 2017): norm(x + attn(x)) instead of x + attn(norm(x))."""
    h = block.ln1(x + block.attn(x, token_positions, kv_cache))
    return block.ln2(h + block.ffn(h))


def decoder_block_ffn_reads_block_input(block, x, token_positions=None, kv_cache=None):
    """The FFN reads ln2 of the block input x, not of h = x + attn(...) (parallel-block by accident)."""
    h = x + block.attn(block.ln1(x), token_positions, kv_cache)
    return h + block.ffn(block.ln2(x))


def decoder_block_norms_swapped(block, x, token_positions=None, kv_cache=None):
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


def lm_always_tied(model, in_indices, token_positions=None, kv_cache=None):
    """The output head is always token_embeddings.weight, even when lm_head.weight was loaded.
    (Positions starting at 1 instead of 0 would be no mistake: RoPE scores depend only on offsets.)"""
    x = model.token_embeddings(in_indices)
    for i, layer in enumerate(model.layers):
        x = layer(x, token_positions, kv_cache[i] if kv_cache else None)
    return F.linear(model.ln_final(x), model.token_embeddings.weight)


# --- generate (replacements for cs336_basics.generate.generate) ----------------------------------


def generate_positions_restart(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                               generator=None, use_cache=True):  # fmt: skip
    """With a KV cache, each new token is fed at position 0 (token_positions not offset by the cache length)."""
    ids = torch.tensor(list(prompt_ids))[None]
    budget = min(max_new_tokens, model.config.context_length - ids.shape[-1])
    cache = model.new_kv_cache(ids.shape[-1] + budget)
    with torch.no_grad():
        logits = model(ids, kv_cache=cache)[:, -1]
        for step in range(budget):
            token = logits.argmax(-1)
            yield int(token)
            if step < budget - 1:
                logits = model(token[:, None], token_positions=torch.tensor([0]), kv_cache=cache)[:, -1]


def generate_from_first_position(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                                 generator=None, use_cache=True):  # fmt: skip
    """Picks each next token from the logits of position 0 instead of the last position."""
    ids = list(prompt_ids)
    budget = min(max_new_tokens, model.config.context_length - len(ids))
    with torch.no_grad():
        for _ in range(budget):
            ids.append(int(model(torch.tensor([ids]))[0, 0].argmax()))
            yield ids[-1]


def generate_cache_not_advanced(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                                generator=None, use_cache=True):  # fmt: skip
    """Recomputes only the newest token at each step, without a cache: it attends to itself alone."""
    ids = torch.tensor(list(prompt_ids))[None]
    budget = min(max_new_tokens, model.config.context_length - ids.shape[-1])
    with torch.no_grad():
        logits = model(ids)[:, -1]
        for step in range(budget):
            token = logits.argmax(-1)
            yield int(token)
            logits = model(token[:, None], token_positions=torch.tensor([ids.shape[-1] + step]))[:, -1]


# ---- correct implementations written differently ---------------------------------------


def linear_matmul(x, weight, bias=None):
    return _plus(x @ weight.transpose(-1, -2), bias)


def silu_exp_division(x):
    x_c = up(x)
    return (x_c / (1 + torch.exp(-x_c))).to(x.dtype)


def softmax_logsumexp(x, dim=-1):
    x_c = up(x)
    lse = torch.logsumexp(x_c, dim, keepdim=True)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    return torch.exp(x_c - lse).to(x.dtype)


def rmsnorm_meta_cast_order(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    normed = (x_c / torch.sqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return normed * weight.to(x.dtype)  # Meta / Hugging Face: cast, then multiply by the gain


def layernorm_torch_var(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean, var = x_c.mean(-1, keepdim=True), x_c.var(-1, keepdim=True, unbiased=False)
    out = (x_c - mean) / torch.sqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


def swiglu_in_three_lines(x, w1, w2, w3, activation="silu"):
    gate = x @ w1.T
    gate = gate * torch.sigmoid(gate.float()).to(gate.dtype)  # SiLU, sigmoid in float32
    return (gate * (x @ w3.T)) @ w2.T


def attention_scaled_queries_logsumexp(Q, K, V, mask=None):
    # Q / sqrt(d_k) before the product, softmax as exp(s - logsumexp(s)); a fully masked row -> zeros
    dtype = up(Q).dtype
    scores = (up(Q) * Q.shape[-1] ** -0.5) @ up(K).transpose(-1, -2)
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=dtype))
    lse = torch.logsumexp(scores, -1, keepdim=True)
    probs = torch.where(torch.isneginf(lse), torch.zeros_like(scores), torch.exp(scores - lse))
    return probs.to(V.dtype) @ V


def rope_complex_multiplication(x, cos, sin, token_positions):
    # Meta's llama apply_rotary_emb: adjacent pairs as complex numbers times e^{i angle}
    dtype = up(x).dtype
    rot = torch.complex(cos[token_positions].to(dtype), sin[token_positions].to(dtype))  # (..., seq, d_k/2)
    z = torch.view_as_complex(up(x).reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(z * rot).flatten(-2).to(x.dtype)


def gqa_repeat_kv(q, k, v, mask=None):
    # Hugging Face's repeat_kv: copy each key/value head for its group of query heads
    group = q.shape[-3] // k.shape[-3]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(group, -3), v.repeat_interleave(group, -3), mask)


_generate = generation.generate


def generate_recomputing_everything(*args, **kwargs):
    # no KV cache: the whole sequence runs again at every step
    return _generate(*args, **{**kwargs, "use_cache": False})


@dataclass(frozen=True)
class Variant:
    """A replacement for one kernel (or module method): `owner.attribute = replacement`."""

    name: str  # <component>-<what>, used as the test id
    owner: object  # the module or class whose attribute is replaced
    attribute: str
    replacement: Callable

    @property
    def component(self) -> str:
        return self.name.split("-")[0]

    @contextlib.contextmanager
    def applied(self):
        original = getattr(self.owner, self.attribute)
        setattr(self.owner, self.attribute, self.replacement)
        try:
            yield
        finally:
            setattr(self.owner, self.attribute, original)


@dataclass(frozen=True)
class Mistake(Variant):
    """A plausible wrong implementation and, in words, what it does wrong."""

    raises: tuple[type[BaseException], ...] = ()  # exceptions that are this mistake's failure, besides a wrong output
    diagnosis: str = ""  # completes "your output equals what ... gives"


# ---- tensor parallelism (cs336_basics/nn/parallel). Patched in the parent process, these reach
# the ranks: the launcher forks them (spawn re-imports and would not see a patch; Linux forks).

_shard_state_dict = convert.shard_state_dict  # the right one, kept before any patching


def parallel_shard_along_wrong_axis(state_dict, plan, rank, world_size):
    # column-parallel weights split along d_in, row-parallel along d_out: Megatron's transposed
    flipped = {k: (None if d is None else 1 - d) for k, d in plan.items()}
    return _shard_state_dict(state_dict, flipped, rank, world_size)


def parallel_row_without_all_reduce(self, x):
    if not self.input_is_parallel:
        x = comm.scatter_to_parallel_region(x, self.group)
    return F.linear(x, self.weight)  # this rank's partial product, never summed


def parallel_ffn_all_reduce_after_w1(self, x):
    act = F.get_activation(self.activation)
    gate = comm.reduce_from_parallel_region(self.w1(x), self.w1.group)  # sums unit j of every rank
    return self.w2(act(gate) * self.w3(x))


def parallel_ffn_gather_before_product(self, x):
    act = F.get_activation(self.activation)
    gate = comm.gather_from_parallel_region(self.w1(x), self.w1.group)  # (..., d_ff)
    up = comm.gather_from_parallel_region(self.w3(x), self.w3.group)  # (..., d_ff)
    return self.w2(comm.scatter_to_parallel_region(act(gate) * up, self.w2.group))  # right numbers, 3 collectives


class _CopyWithoutBackwardAllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # each rank keeps only its shard's share of the input gradient


def parallel_f_without_backward_all_reduce(x, group=None):
    return x if comm._group_size(group) == 1 else _CopyWithoutBackwardAllReduce.apply(x, group)


class _ReduceAlsoInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm._all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return comm._all_reduce(grad, ctx.group), None  # grad is already replicated: W times too large


def parallel_g_all_reduce_in_backward(x, group=None):
    return x if comm._group_size(group) == 1 else _ReduceAlsoInBackward.apply(x, group)


# ---- the catalogue -----------------------------------------------------------------------

MISTAKES = [
    Mistake(
        "linear-transposed_weight",
        F,
        "linear",
        linear_transposed,
        raises=(RuntimeError,),
        diagnosis="Linear multiplying by W instead of W^T (x @ weight, with weight stored (d_out, d_in))",
    ),
    Mistake(
        "linear-stray_bias",
        F,
        "linear",
        linear_with_stray_bias,
        diagnosis="Linear with a bias that was never loaded (an unused torch.nn.Linear-style bias left in)",
    ),
    Mistake(
        "linear-crash_on_2d_or_4d_input",
        F,
        "linear",
        linear_only_3d,
        raises=(RuntimeError,),
        diagnosis="Linear written for 3-D input only (it must take any number of leading dimensions)",
    ),
    Mistake(
        "embedding-off_by_one",
        F,
        "embedding",
        embedding_off_by_one,
        diagnosis="Embedding looking up row id - 1 instead of row id",
    ),
    Mistake(
        "embedding-one_hot_matmul_in_bf16",
        F,
        "embedding",
        embedding_one_hot_matmul_in_input_dtype,
        diagnosis="Embedding as a one-hot matrix product in bfloat16, which rounds the rows",
    ),
    Mistake(
        "silu-sigmoid_alone", F, "silu", silu_is_sigmoid, diagnosis="SiLU returning sigmoid(x) without multiplying by x"
    ),
    Mistake(
        "silu-gaussian_cdf_gate",
        F,
        "silu",
        silu_is_gelu,
        diagnosis="SiLU replaced by GELU (x * Phi(x) instead of x * sigmoid(x))",
    ),
    Mistake("silu-relu_instead", F, "silu", silu_is_relu, diagnosis="SiLU replaced by ReLU"),
    Mistake(
        "silu-sigmoid_as_exp_ratio_overflows",
        F,
        "silu",
        silu_as_exp_ratio,
        diagnosis="SiLU with sigmoid written as exp(x) / (1 + exp(x)), which is inf / inf = NaN for large x",
    ),
    Mistake(
        "gelu-tanh_for_exact",
        F,
        "gelu",
        gelu_always_tanh,
        diagnosis="GELU using the tanh approximation where the exact erf form was asked for",
    ),
    Mistake(
        "gelu-exact_for_tanh",
        F,
        "gelu",
        gelu_always_exact,
        diagnosis="GELU using the exact erf form where the tanh approximation was asked for",
    ),
    Mistake(
        "gelu-sigmoid_approximation",
        F,
        "gelu",
        gelu_sigmoid_approximation,
        diagnosis="GELU approximated as x * sigmoid(1.702 x)",
    ),
    Mistake(
        "softmax-no_max_subtraction",
        F,
        "softmax",
        softmax_without_max_subtraction,
        diagnosis="softmax without subtracting the max first (exp overflows for large logits)",
    ),
    Mistake(
        "softmax-ignores_dim",
        F,
        "softmax",
        softmax_always_last_dim,
        diagnosis="softmax always over the last dimension, ignoring `dim`",
    ),
    Mistake(
        "softmax-divides_by_max",
        F,
        "softmax",
        softmax_divides_by_max,
        diagnosis="softmax dividing by the largest exp instead of the sum of exps",
    ),
    Mistake(
        "rmsnorm-eps_outside_sqrt",
        F,
        "rmsnorm",
        rmsnorm_eps_outside_sqrt,
        diagnosis="RMSNorm with epsilon outside the square root: x / (sqrt(mean(x^2)) + eps)",
    ),
    Mistake(
        "rmsnorm-no_float32_upcast",
        F,
        "rmsnorm",
        rmsnorm_no_upcast,
        diagnosis="RMSNorm computed in the input's 16-bit dtype (x^2 overflows float16): upcast to float32 first",
    ),
    Mistake(
        "rmsnorm-subtracts_the_mean",
        F,
        "rmsnorm",
        rmsnorm_is_layernorm,
        diagnosis="RMSNorm that subtracts the mean (that is LayerNorm without a bias)",
    ),
    Mistake(
        "rmsnorm-missing_gain",
        F,
        "rmsnorm",
        rmsnorm_missing_gain,
        diagnosis="RMSNorm without multiplying by the gain `weight`",
    ),
    Mistake(
        "rmsnorm-sum_not_mean",
        F,
        "rmsnorm",
        rmsnorm_sum_not_mean,
        diagnosis="RMSNorm with the sum of squares where the mean of squares belongs",
    ),
    Mistake(
        "rmsnorm-over_whole_tensor",
        F,
        "rmsnorm",
        rmsnorm_over_whole_tensor,
        diagnosis="RMSNorm taking the mean over the whole tensor instead of the last dimension",
    ),
    Mistake(
        "rmsnorm-eps_ignored",
        F,
        "rmsnorm",
        rmsnorm_eps_ignored,
        diagnosis="RMSNorm ignoring the `eps` it was given (a fixed 1e-5)",
    ),
    Mistake(
        "layernorm-unbiased_variance",
        F,
        "layernorm",
        layernorm_unbiased_variance,
        diagnosis="LayerNorm with the unbiased variance (divide by d_model - 1 instead of d_model)",
    ),
    Mistake(
        "layernorm-no_centering",
        F,
        "layernorm",
        layernorm_no_centering,
        diagnosis="LayerNorm without subtracting the mean (RMSNorm plus a bias)",
    ),
    Mistake(
        "layernorm-missing_bias", F, "layernorm", layernorm_missing_bias, diagnosis="LayerNorm without adding the bias"
    ),
    Mistake(
        "layernorm-no_float32_upcast",
        F,
        "layernorm",
        layernorm_no_upcast,
        diagnosis="LayerNorm computed in bfloat16 (the mean of large values loses the centred part): upcast to float32 first",
    ),
    Mistake(
        "swiglu-w1_w3_swapped",
        F,
        "swiglu_ffn",
        swiglu_w1_w3_swapped,
        diagnosis="SwiGLU with w1 and w3 swapped (SiLU on the up projection W3 x, not the gate W1 x)",
    ),
    Mistake(
        "swiglu-activation_on_up_branch_too",
        F,
        "swiglu_ffn",
        swiglu_silu_on_up_branch_too,
        diagnosis="SwiGLU applying SiLU to both W1 x and W3 x",
    ),
    Mistake(
        "swiglu-gaussian_cdf_gate",
        F,
        "swiglu_ffn",
        swiglu_gelu_for_silu,
        diagnosis="SwiGLU gated with GELU instead of SiLU (that is GeGLU)",
    ),
    Mistake(
        "swiglu-sigmoid_gate",
        F,
        "swiglu_ffn",
        swiglu_sigmoid_for_silu,
        diagnosis="SwiGLU gated with sigmoid instead of SiLU (that is GLU)",
    ),
    Mistake(
        "swiglu-no_gate",
        F,
        "swiglu_ffn",
        swiglu_without_gate,
        diagnosis="SwiGLU without the W3 x factor: W2 SiLU(W1 x)",
    ),
    Mistake(
        "swiglu-activation_after_product",
        F,
        "swiglu_ffn",
        swiglu_silu_after_product,
        diagnosis="SwiGLU applying SiLU after the product: W2 SiLU(W1 x * W3 x)",
    ),
    Mistake(
        "positionwise_ffn-ignores_biases",
        F,
        "positionwise_ffn",
        positionwise_ignores_biases,
        diagnosis="the position-wise FFN without its biases b1 and b2",
    ),
    Mistake(
        "positionwise_ffn-relu_activation",
        F,
        "positionwise_ffn",
        positionwise_relu_for_gelu,
        diagnosis="the position-wise FFN with ReLU where its activation argument says GELU",
    ),
    Mistake(
        "positionwise_ffn-bias_after_activation",
        F,
        "positionwise_ffn",
        positionwise_bias_after_activation,
        diagnosis="the position-wise FFN adding b1 after the activation instead of before",
    ),
    Mistake(
        "ffn_block-post_norm",
        FFNBlock,
        "forward",
        block_post_norm,
        diagnosis="the block normalising after the residual sum (post-norm: Norm(x + FFN(x)))",
    ),
    Mistake(
        "ffn_block-no_residual",
        FFNBlock,
        "forward",
        block_no_residual,
        diagnosis="the block without the residual connection (FFN(Norm(x)) alone)",
    ),
    Mistake(
        "ffn_block-residual_of_normed_input",
        FFNBlock,
        "forward",
        block_residual_of_normed_input,
        diagnosis="the block adding the normalised input instead of x (Norm(x) + FFN(Norm(x)))",
    ),
    Mistake(
        "parallel-wrong_shard_axis",
        convert,
        "shard_state_dict",
        parallel_shard_along_wrong_axis,
        raises=(ValueError,),  # a non-square weight's shard does not fit the layer
        diagnosis="weights sharded along the wrong axis (column-parallel split by input columns, row-parallel by "
        "output rows)",
    ),
    Mistake(
        "parallel-row_missing_all_reduce",
        RowParallelLinear,
        "forward",
        parallel_row_without_all_reduce,
        diagnosis="the row-parallel layer returning its own partial product x_r W_r^T, without the all-reduce (g) "
        "that sums the ranks' partial products",
    ),
    Mistake(
        "parallel-ffn_all_reduce_after_w1",
        ParallelSwiGLUFFN,
        "forward",
        parallel_ffn_all_reduce_after_w1,
        diagnosis="the parallel FFN all-reducing W1 x before SiLU: each rank holds different hidden units, not "
        "partial sums of the same ones",
    ),
]

# Tensor-parallel mistakes no forward snapshot can see (the adapters return outputs, not
# gradients or collective counts): each fails a test of tests/test_parallel_layers.py instead,
# named in `caught_by`; tests/staff/test_mistake_catalogue.py checks that it does.
PARALLEL_MISTAKES_BEYOND_SNAPSHOTS = [
    (Mistake(
        "parallel-ffn_gather_before_product",
        ParallelSwiGLUFFN,
        "forward",
        parallel_ffn_gather_before_product,
        diagnosis="the parallel FFN all-gathering W1 x and W3 x to the full d_ff before the product: right numbers, "
        "two all-gathers and a full-width product too many",
    ), "collectives"),
    (Mistake(
        "parallel-f_backward_missing_all_reduce",
        parallel_column,
        "copy_to_parallel_region",
        parallel_f_without_backward_all_reduce,
        diagnosis="f without the all-reduce in backward: each rank's input gradient is only its shard's share",
    ), "input grad"),
    (Mistake(
        "parallel-g_all_reduce_in_backward",
        parallel_row,
        "reduce_from_parallel_region",
        parallel_g_all_reduce_in_backward,
        diagnosis="g all-reducing in backward too: every upstream gradient W times too large",
    ), "grad"),
]

MISTAKES += [
    Mistake("attention-mask_inverted", F, "scaled_dot_product_attention", sdpa_mask_inverted,
            diagnosis="attention treating True in the mask as blocked (masked_fill(mask, -inf) instead of ~mask)"),
    Mistake("attention-scaled_by_d_k", F, "scaled_dot_product_attention", sdpa_scale_by_d_k,
            diagnosis="attention dividing the scores by d_k instead of sqrt(d_k)"),
    Mistake("attention-softmax_over_queries", F, "scaled_dot_product_attention", sdpa_softmax_over_queries,
            diagnosis="attention with the softmax over the queries (dim=-2) instead of over the keys (dim=-1)"),
    Mistake("attention-mask_after_softmax", F, "scaled_dot_product_attention", sdpa_mask_after_softmax,
            diagnosis="attention zeroing masked probabilities after the softmax (the rows no longer sum to 1)"),
    Mistake("attention-no_scaling", F, "scaled_dot_product_attention", sdpa_no_scale,
            diagnosis="attention without the 1/sqrt(d_k) scaling of the scores"),
    Mistake("rope-rotates_halves", F, "rope", rope_rotate_halves,
            diagnosis="RoPE pairing x[k] with x[k + d_k/2] (Hugging Face's rotate_half) instead of adjacent pairs "
                      "(x[2k], x[2k+1])"),
    Mistake("rope-ignores_token_positions", F, "rope", rope_ignores_positions,
            diagnosis="RoPE at positions 0, 1, ..., seq-1 whatever token_positions says"),
    Mistake("rope-rotates_backwards", F, "rope", rope_sign_flipped,
            diagnosis="RoPE rotating by minus the angle (the signs of the sin terms swapped)"),
    Mistake("rope-frequency_exponent_k_not_2k", F, "rope", rope_frequency_uses_k_not_2k,
            diagnosis="RoPE with frequencies theta^(-k/d_k) instead of theta^(-2k/d_k) for pair k"),
    Mistake("mha-no_causal_mask", F, "multihead_self_attention", mha_no_causal_mask,
            diagnosis="self-attention without the causal mask (every position sees later tokens)"),
    Mistake("mha-heads_split_wrong", F, "multihead_self_attention", mha_heads_split_wrong,
            diagnosis="self-attention splitting d_model into (d_k, num_heads) instead of (num_heads, d_k)"),
    Mistake("mha-kv_heads_tiled", F, "multihead_self_attention", mha_gqa_tiled_not_interleaved,
            diagnosis="grouped-query attention with query head h reading kv head h % num_kv_heads (tiled) instead of "
                      "h // (num_heads / num_kv_heads)"),
    Mistake("mha-rotary_on_values", F, "multihead_self_attention", mha_rope_on_values,
            diagnosis="self-attention rotating the values as well as the queries and keys"),
    Mistake("block-post_norm", TransformerBlock, "forward", decoder_block_post_norm,
            diagnosis="the decoder layer normalising after each residual sum (post-norm)"),
    Mistake("block-ffn_reads_block_input", TransformerBlock, "forward", decoder_block_ffn_reads_block_input,
            diagnosis="the decoder layer feeding ln2 the layer's input x instead of h = x + attention"),
    Mistake("block-norms_swapped", TransformerBlock, "forward", decoder_block_norms_swapped,
            diagnosis="the decoder layer with ln1 and ln2 swapped"),
    Mistake("lm-no_final_norm", TransformerLM, "forward", lm_no_final_norm,
            diagnosis="the language model without ln_final before the output head"),
    Mistake("lm-returns_probabilities", TransformerLM, "forward", lm_softmax_output,
            diagnosis="the language model returning softmax probabilities instead of logits"),
    Mistake("lm-head_always_tied", TransformerLM, "forward", lm_always_tied,
            diagnosis="the language model using token_embeddings.weight as the output head even when lm_head.weight "
                      "is given (untied)"),
    Mistake("generate-positions_restart_with_cache", generation, "generate", generate_positions_restart,
            diagnosis="generation feeding each new token at position 0 (not after the cached ones)"),
    Mistake("generate-next_token_from_first_position", generation, "generate", generate_from_first_position,
            diagnosis="generation choosing each token from the logits of the first position instead of the last"),
    Mistake("generate-newest_token_alone", generation, "generate", generate_cache_not_advanced,
            diagnosis="generation running only the newest token without a KV cache (it attends to itself alone)"),
]

VARIANTS = [
    Variant("linear-matmul", F, "linear", linear_matmul),
    Variant("silu-exp_division", F, "silu", silu_exp_division),
    Variant("softmax-logsumexp", F, "softmax", softmax_logsumexp),
    Variant("rmsnorm-meta_cast_order", F, "rmsnorm", rmsnorm_meta_cast_order),
    Variant("layernorm-torch_var", F, "layernorm", layernorm_torch_var),
    Variant("swiglu-matmuls", F, "swiglu_ffn", swiglu_in_three_lines),
    Variant("attention-scaled_queries_logsumexp", F, "scaled_dot_product_attention", attention_scaled_queries_logsumexp),
    Variant("rope-complex_multiplication", F, "rope", rope_complex_multiplication),
    Variant("mha-repeat_kv", F, "grouped_query_attention", gqa_repeat_kv),
    Variant("generate-without_cache", generation, "generate", generate_recomputing_everything),
]

from cs336_basics.staff.mistakes_tokenizer import BPE_MISTAKES  # noqa: E402 (it imports Mistake from here)

MISTAKES += BPE_MISTAKES
