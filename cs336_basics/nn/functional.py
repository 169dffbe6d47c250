"""Stateless kernels: the math of every building block lives here, once.

Every kernel takes any number of leading dimensions and returns the dtype of its
input. Dtype policy: float32 and float64 inputs are computed in their own dtype;
bfloat16 and float16 inputs to the pointwise and normalising kernels are computed
in float32 and cast back once, at the end (PyTorch's own CPU kernels do the same).
Matrix products run in the input dtype (PyTorch accumulates half types in float32).

The modules in `cs336_basics.nn.modules` own the parameters and call these.
"""

import math
from collections.abc import Callable

import torch
from einops import einsum  # noqa: F401  (available to solutions; the reference uses torch's)
from jaxtyping import Bool, Float, Int
from torch import Tensor

from cs336_basics.nn import _checks


def _compute_dtype(x: Tensor) -> torch.dtype:
    """float64 stays float64; everything else is computed in float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _as(x: Tensor, dtype: torch.dtype) -> Tensor:
    """x.to(dtype), but x itself, without a dispatched call, when it has that dtype already (the
    common case: a decode step would otherwise make hundreds of no-op calls)."""
    return x if x.dtype == dtype else x.to(dtype)


def _upcast(x: Tensor) -> Tensor:
    """x in its compute dtype (_compute_dtype)."""
    return _as(x, _compute_dtype(x))


def linear(
    x: Float[Tensor, "... d_in"], weight: Float[Tensor, "d_out d_in"], bias: Float[Tensor, " d_out"] | None = None
) -> Float[Tensor, "... d_out"]:
    """y = x W^T (+ b), with W of shape (d_out, d_in) as in torch.nn.Linear. Runs in x's dtype."""
    _checks.linear(x, weight, bias)
    # BEGIN SOLUTION
    y = x @ weight.mT  # (..., d_out); matmul, not einsum: einsum's dispatch dominates small decode steps
    return y if bias is None else y + bias
    # END SOLUTION


def embedding(
    token_ids: Int[Tensor, "..."], weight: Float[Tensor, "vocab_size d_model"]
) -> Float[Tensor, "... d_model"]:
    """out[..., :] = weight[token_ids[...], :]: a row lookup. Returns weight's dtype."""
    _checks.embedding(token_ids, weight)
    # BEGIN SOLUTION
    return weight[token_ids]
    # END SOLUTION


def silu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """SiLU(x) = x * sigmoid(x). Written as a product, not x / (1 + exp(-x)): both give -0.0 for
    large negative x, but the quotient's gradient is NaN there (exp(-x) = inf, inf / inf) while
    the product's is 0. Half types are computed in float32 and cast back once."""
    _checks.annotations(silu, x)
    # BEGIN SOLUTION
    x_c = _upcast(x)
    return _as(x_c * torch.sigmoid(x_c), x.dtype)
    # END SOLUTION


def gelu(x: Float[Tensor, "..."], approximate: str = "none") -> Float[Tensor, "..."]:
    """GELU(x) = x * Phi(x) = 0.5 x erfc(-x / sqrt(2))                       (approximate="none")
    ~= 0.5 x (1 + tanh(u)) = x * sigmoid(2u),  u = sqrt(2/pi) (x + 0.044715 x^3)  (approximate="tanh").
    Hendrycks & Gimpel (2016). Written with erfc and sigmoid rather than 1 + erf and 1 + tanh,
    which cancel for x << 0. Half types are computed in float32."""
    _checks.gelu(x, approximate)
    # BEGIN SOLUTION
    x_c = _upcast(x)
    if approximate == "tanh":
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c.pow(3))
        out = x_c * torch.sigmoid(2.0 * u)
    else:
        out = 0.5 * x_c * torch.erfc(-x_c / math.sqrt(2.0))
    return _as(out, x.dtype)
    # END SOLUTION


def relu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """ReLU(x) = max(x, 0); NaN stays NaN, as in torch.relu. Given to students (not a graded
    component), like the activation registry below."""
    _checks.annotations(relu, x)
    return torch.where((x > 0) | x.isnan(), x, torch.zeros_like(x))


def _gelu_tanh(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    return gelu(x, approximate="tanh")


# Config-driven lookup by name, like Hugging Face's ACT2FN and its config's `hidden_act: "silu"`.
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "silu": silu,
    "gelu": gelu,
    "gelu_tanh": _gelu_tanh,
    "relu": relu,
}


def get_activation(name: str) -> Callable[[Tensor], Tensor]:
    """The activation called `name`; an unknown name raises ValueError listing the valid ones."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; valid names are {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def swiglu_ffn(
    x: Float[Tensor, "... d_model"],
    w1: Float[Tensor, "d_ff d_model"],
    w2: Float[Tensor, "d_model d_ff"],
    w3: Float[Tensor, "d_ff d_model"],
    activation: str = "silu",
) -> Float[Tensor, "... d_model"]:
    """FFN(x) = W2 (SiLU(W1 x) * W3 x)   (Shazeer 2020; CS336 eq. 7; Meta naming:
    w1 = gate, w3 = up, w2 = down; Hugging Face: gate_proj, up_proj, down_proj).
    `activation` names the gate's nonlinearity, as Hugging Face's `hidden_act` does
    ("gelu" gives GeGLU). Runs in x's dtype."""
    _checks.swiglu_ffn(x, w1, w2, w3)
    act = get_activation(activation)
    # BEGIN SOLUTION
    gate = act(linear(x, w1))  # (..., d_ff)
    up = linear(x, w3)  # (..., d_ff)
    return linear(gate * up, w2)  # (..., d_model)
    # END SOLUTION


def positionwise_ffn(
    x: Float[Tensor, "... d_model"],
    w1: Float[Tensor, "d_ff d_model"],
    b1: Float[Tensor, " d_ff"] | None,
    w2: Float[Tensor, "d_model d_ff"],
    b2: Float[Tensor, " d_model"] | None,
    activation: str = "gelu",
) -> Float[Tensor, "... d_model"]:
    """FFN(x) = act(x W1^T + b1) W2^T + b2: the original position-wise FFN (Vaswani et al.
    2017 with ReLU; BERT and GPT-2 with GELU). Biases may be None. Runs in x's dtype."""
    _checks.positionwise_ffn(x, w1, b1, w2, b2)
    act = get_activation(activation)
    # BEGIN SOLUTION
    hidden = linear(x, w1, b1)  # (..., d_ff)
    return linear(act(hidden), w2, b2)  # (..., d_model)
    # END SOLUTION


def rmsnorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, " d_model"],
    eps: float = 1e-5,
    cast_before_gain: bool = False,
) -> Float[Tensor, "... d_model"]:
    """RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g   (Zhang & Sennrich 2019; eps inside the root).

    Cast order (default, CS336): upcast x and g to float32, normalise and multiply by g in
    float32, cast the product to x's dtype: one rounding. With cast_before_gain=True (Meta's
    llama, Hugging Face's LlamaRMSNorm): the normalised value is cast to x's dtype first and
    then multiplied by g in x's dtype: two roundings in bfloat16. The default is CS336's order
    because it rounds once (measured errors: tests/README.md); both orders pass the tests (one
    rounding apart), the upcast before normalising does not (float16 x^2 overflows). float64
    stays float64.
    """
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:  # given: the default order with a gain of 1 (exact) is the rounded normalised value
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    # BEGIN SOLUTION
    x_c = _upcast(x)
    normed = x_c * torch.rsqrt(x_c.pow(2).mean(dim=-1, keepdim=True) + eps)
    return _as(normed * _as(weight, x_c.dtype), x.dtype)
    # END SOLUTION


def layernorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, " d_model"],
    bias: Float[Tensor, " d_model"] | None,
    eps: float = 1e-5,
) -> Float[Tensor, "... d_model"]:
    """LayerNorm(x) = (x - mean(x)) / sqrt(var(x) + eps) * g + b, with the biased variance
    (divide by d_model), as torch.nn.LayerNorm (Ba et al. 2016). Upcast to float32, compute,
    cast the result to x's dtype once; float64 stays float64. bias may be None."""
    _checks.norm(x, weight, bias, eps)
    # BEGIN SOLUTION
    x_c = _upcast(x)
    mean = x_c.mean(dim=-1, keepdim=True)
    var = (x_c - mean).pow(2).mean(dim=-1, keepdim=True)  # biased: divide by d_model
    out = (x_c - mean) * torch.rsqrt(var + eps) * _as(weight, x_c.dtype)
    if bias is not None:
        out = out + _as(bias, x_c.dtype)
    return _as(out, x.dtype)
    # END SOLUTION


def softmax(x: Float[Tensor, "..."], dim: int = -1) -> Float[Tensor, "..."]:
    """softmax(x)_i = exp(x_i - max(x)) / sum_j exp(x_j - max(x)) along `dim`.

    Subtracting the max keeps exp from overflowing for large logits. Entries of -inf get
    probability 0; a row that is entirely -inf (fully masked) returns all zeros rather than
    NaN (torch.softmax returns NaN there). Half types are computed in float32 and cast back.
    """
    _checks.softmax(x, dim)
    # BEGIN SOLUTION
    x_c = _upcast(x)
    # The max is a constant (softmax is shift-invariant); a fully masked row's max, -inf, becomes
    # the lowest finite value, so that its entries give exp(-inf) = 0, not exp(-inf + inf) = NaN.
    row_max = x_c.detach().amax(dim=dim, keepdim=True).clamp(min=torch.finfo(x_c.dtype).min)
    exps = torch.exp(x_c - row_max)  # max exp(0) = 1: no overflow
    # A row's sum is at least 1 (its max gives exp(0)), but a fully masked row's is 0: replaced by 1,
    # it gives zeros / 1 = zeros and a finite gradient (clamped at the smallest positive float it
    # gives zeros too, but a gradient g / tiny that overflows to inf, and inf x exp(-inf) is NaN).
    total = exps.sum(dim=dim, keepdim=True)
    total = total.masked_fill(total == 0, 1.0)
    return _as(exps * total.reciprocal(), x.dtype)  # a product's backward is cheaper than a quotient's
    # END SOLUTION


# --- Decoder: attention, rotary position embeddings, multi-head self-attention ----------------


def _broadcast_matmul(a: Float[Tensor, "... n k"], b: Float[Tensor, "... k m"]) -> Float[Tensor, "... n m"]:
    """a @ b, where b's third-to-last dimension of 1 (a key/value head serving a group of query
    heads) broadcasts over a's without a copy: that dimension of a is folded into its rows, one
    product per key/value head. a @ b would copy b for each of a's."""
    if a.dim() >= 3 and b.dim() >= 3 and b.shape[-3] == 1 < a.shape[-3]:
        return (a.flatten(-3, -2) @ b.squeeze(-3)).unflatten(-2, a.shape[-3:-1])
    return a @ b


def scaled_dot_product_attention(
    Q: Float[Tensor, "... queries d_k"],
    K: Float[Tensor, "... keys d_k"],
    V: Float[Tensor, "... keys d_v"],
    mask: Bool[Tensor, "..."] | None = None,
) -> Float[Tensor, "... queries d_v"]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V   (Vaswani et al. 2017, eq. 1).

    mask (optional, bool, broadcastable to (..., queries, keys)): True where a query may attend
    to a key; False scores become -inf before the softmax. A query that may attend to nothing
    gets zeros (softmax's fully masked row). Scores and the softmax run in float32 for half
    types (float64 stays float64); the probabilities are cast to V's dtype for the last product.
    """
    _checks.attention(Q, K, V, mask)
    # BEGIN SOLUTION
    d_k = Q.shape[-1]
    # Q is scaled, not the scores: queries x d_k numbers instead of queries x keys.
    scores = _broadcast_matmul(Q * (1.0 / math.sqrt(d_k)), K.mT)  # (..., queries, keys)
    scores = _upcast(scores)  # float32 for half types
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = _as(softmax(scores, dim=-1), V.dtype)  # a fully masked row is zeros, not NaN
    return _broadcast_matmul(probs, V)  # (..., queries, d_v)
    # END SOLUTION


def causal_mask(num_queries: int, num_keys: int, device=None) -> Bool[Tensor, "queries keys"]:
    """True where query i may attend to key j: the queries are the last `num_queries` of
    `num_keys` positions (a key/value cache holds the earlier ones), so query i sits at
    position num_keys - num_queries + i and sees keys j <= that position."""
    _checks.causal_mask(num_queries, num_keys)
    # BEGIN SOLUTION
    offset = num_keys - num_queries
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(diagonal=offset)
    # END SOLUTION


def rope_cos_sin(d_k: int, theta: float, max_seq_len: int, device=None) -> tuple[Tensor, Tensor]:
    """cos and sin of the RoPE angles, each (max_seq_len, d_k / 2), in float64:
    angle[i, k] = i * theta^(-2k / d_k) for position i and pair k (Su et al. 2021, eq. 15;
    CS336 section 3.5.3). Computed in float64 so that large positions keep their precision, on the
    CPU and then moved to `device` (a table built once; the meta device has no kernel of its own
    for a scalar's power)."""
    _checks.rope_cos_sin(d_k, theta, max_seq_len)
    # BEGIN SOLUTION
    inv_freq = theta ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # (d_k/2,)
    angles = torch.arange(max_seq_len, dtype=torch.float64)[:, None] * inv_freq  # (max_seq_len, d_k/2)
    return angles.cos().to(device), angles.sin().to(device)
    # END SOLUTION


def rope(
    x: Float[Tensor, "... seq d_k"],
    cos: Float[Tensor, "max_seq_len half_d_k"],
    sin: Float[Tensor, "max_seq_len half_d_k"],
    token_positions: Int[Tensor, "..."],
) -> Float[Tensor, "... seq d_k"]:
    """Rotate each adjacent pair (x[2k], x[2k+1]) of the last dimension by the angle of its
    token's position (Su et al. 2021; CS336 section 3.5.3; Meta's llama):
        out[2k]   = x[2k] cos - x[2k+1] sin
        out[2k+1] = x[2k] sin + x[2k+1] cos
    token_positions (..., seq) must broadcast against x's leading dimensions (..., seq).
    Computed in float32 for half types (float64 stays float64), returned in x's dtype."""
    _checks.rope(x, cos, sin, token_positions)
    # BEGIN SOLUTION
    half = x.shape[-1] // 2
    dtype = _compute_dtype(x)
    cos_p, sin_p = _as(cos[token_positions], dtype), _as(sin[token_positions], dtype)  # (..., seq, d_k/2)
    pairs = _as(x, dtype).unflatten(-1, (half, 2))  # (..., seq, d_k/2, 2)
    x0, x1 = pairs[..., 0], pairs[..., 1]  # (..., seq, d_k/2) each
    out = torch.stack((x0 * cos_p - x1 * sin_p, x0 * sin_p + x1 * cos_p), dim=-1)  # (..., seq, d_k/2, 2)
    return _as(out.flatten(-2), x.dtype)  # (..., seq, d_k)
    # END SOLUTION


def grouped_query_attention(
    q: Float[Tensor, "... num_heads queries d_k"],
    k: Float[Tensor, "... num_kv_heads keys d_k"],
    v: Float[Tensor, "... num_kv_heads keys d_v"],
    mask: Bool[Tensor, "..."] | None = None,
) -> Float[Tensor, "... num_heads queries d_v"]:
    """Scaled dot-product attention where each key/value head serves num_heads / num_kv_heads
    consecutive query heads (Ainslie et al. 2023, GQA; num_kv_heads = 1 is multi-query attention,
    Shazeer 2019; num_kv_heads = num_heads is ordinary multi-head attention). Query head h uses
    key/value head h // (num_heads / num_kv_heads), as Hugging Face's repeat_kv does. The
    keys and values are broadcast, not copied. mask broadcasts to (..., num_heads, queries, keys)
    (q's leading dimensions); a heads dimension of 1 serves every head."""
    _checks.grouped_query_attention(q, k)
    # BEGIN SOLUTION
    num_heads, num_kv_heads = q.shape[-3], k.shape[-3]
    group = num_heads // num_kv_heads
    q = q.unflatten(-3, (num_kv_heads, group))  # (..., num_kv_heads, group, queries, d_k)
    k, v = k.unsqueeze(-3), v.unsqueeze(-3)  # (..., num_kv_heads, 1, keys, d)
    if mask is not None and mask.dim() >= 3:  # a heads dimension: split it as q's is
        mask = mask.unsqueeze(-3) if mask.shape[-3] == 1 else mask.unflatten(-3, (num_kv_heads, group))
    out = scaled_dot_product_attention(q, k, v, mask)  # (..., num_kv_heads, group, queries, d_v)
    return out.flatten(-4, -3)  # (..., num_heads, queries, d_v)
    # END SOLUTION


def multihead_self_attention(
    x: Float[Tensor, "... seq d_model"],
    q_proj_weight: Float[Tensor, "d_q d_model"],
    k_proj_weight: Float[Tensor, "d_kv d_model"],
    v_proj_weight: Float[Tensor, "d_kv d_model"],
    o_proj_weight: Float[Tensor, "d_model d_q"],
    num_heads: int,
    rope_cache: tuple[Tensor, Tensor] | None = None,
    token_positions: Int[Tensor, "..."] | None = None,
    kv_cache=None,
    attention_mask: Bool[Tensor, "... keys"] | None = None,
) -> Float[Tensor, "... seq d_model"]:
    """Causal multi-head self-attention (Vaswani et al. 2017, section 3.2.2; CS336 section 3.5.5):
        q, k, v = x Wq^T, x Wk^T, x Wv^T, split into heads of d_k = d_q / num_heads;
        q, k = RoPE(q), RoPE(k) if rope_cache = (cos, sin) is given;
        out = concat_h(attention(q_h, k_h, v_h, causal mask)) Wo^T.
    The number of key/value heads is k_proj_weight's rows / d_k (grouped-query attention when
    fewer than num_heads). token_positions (..., seq) defaults to the positions after what
    kv_cache holds (0, 1, ... without a cache). kv_cache, if given, has
    `update(k, v) -> (all k, all v)` and `length`; the new keys and values are appended to it.
    attention_mask (..., keys), keys = cached + seq, is True for real tokens and False for padding,
    which no query attends to (Hugging Face's attention_mask: a batch of left-padded prompts).
    Runs in x's dtype (attention's softmax in float32 for half types)."""
    _checks.multihead_self_attention(
        x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, kv_cache, attention_mask
    )
    # BEGIN SOLUTION
    seq, d_k = x.shape[-2], q_proj_weight.shape[0] // num_heads
    kv_heads = k_proj_weight.shape[0] // d_k
    q = linear(x, q_proj_weight).unflatten(-1, (num_heads, d_k)).transpose(-3, -2)  # (..., heads, seq, d_k)
    k = linear(x, k_proj_weight).unflatten(-1, (kv_heads, d_k)).transpose(-3, -2)  # (..., kv_heads, seq, d_k)
    v = linear(x, v_proj_weight).unflatten(-1, (kv_heads, d_k)).transpose(-3, -2)  # (..., kv_heads, seq, d_k)
    past = kv_cache.length if kv_cache is not None else 0
    if rope_cache is not None:
        if token_positions is None:
            token_positions = torch.arange(past, past + seq, device=x.device)  # (seq,)
        positions = token_positions.unsqueeze(-2)  # (..., 1, seq): the same positions for every head
        heads = q.shape[-3]  # one rope call (one check, one gather of cos and sin) for q and k
        q, k = rope(torch.cat([q, k], dim=-3), *rope_cache, positions).split([heads, k.shape[-3]], dim=-3)
    if kv_cache is not None:
        k, v = kv_cache.update(k, v)  # (..., kv_heads, past + seq, d_k)
    # one new token attends to every cached key: no mask to build
    mask = causal_mask(seq, k.shape[-2], device=x.device) if seq > 1 else None  # (seq, past + seq)
    if attention_mask is not None:
        keep = attention_mask[..., None, None, :]  # (..., 1, 1, past + seq): every head, every query
        mask = keep if mask is None else mask & keep
    out = grouped_query_attention(q, k, v, mask)  # (..., heads, seq, d_k)
    return linear(out.transpose(-3, -2).flatten(-2), o_proj_weight)  # (..., seq, d_model)
    # END SOLUTION


# --- Training: the loss ----------------------------------------------------------------------


def cross_entropy(inputs: Float[Tensor, "... vocab_size"], targets: Int[Tensor, "..."]) -> Float[Tensor, ""]:
    """The mean over every position of -log softmax(inputs)[target], written as
    logsumexp(inputs) - inputs[target] with the row's max subtracted first (CS336 section 4.1), so
    that logits of +-1e4 neither overflow exp nor underflow a probability to log(0). inputs
    (..., vocab_size) are logits, targets (...) class indices. Half types are computed in float32
    and the loss is returned in inputs' dtype."""
    _checks.cross_entropy(inputs, targets)
    # BEGIN SOLUTION
    logits = _upcast(inputs)
    shifted = logits - logits.detach().amax(dim=-1, keepdim=True)  # (..., vocab_size), max 0: exp cannot overflow
    log_normalizer = shifted.exp().sum(dim=-1).log()  # (...,): logsumexp(shifted), >= 0
    target_logit = shifted.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)  # (...,)
    return _as((log_normalizer - target_logit).mean(), inputs.dtype)
    # END SOLUTION
