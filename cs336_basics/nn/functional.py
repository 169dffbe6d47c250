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
from einops import einsum
from jaxtyping import Float, Int
from torch import Tensor

from cs336_basics.nn._checks import (
    check_dim,
    check_float,
    check_last_dim,
    check_positive,
    check_same_dtype,
    check_shape,
)


def _compute_dtype(x: Tensor) -> torch.dtype:
    """float64 stays float64; everything else is computed in float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def linear(
    x: Float[Tensor, "... d_in"], weight: Float[Tensor, "d_out d_in"], bias: Float[Tensor, "d_out"] | None = None
) -> Float[Tensor, "... d_out"]:
    """y = x W^T (+ b), with W of shape (d_out, d_in) as in torch.nn.Linear. Runs in x's dtype."""
    check_float("x", x)
    check_float("weight", weight)
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D (d_out, d_in), got shape {tuple(weight.shape)}")
    check_last_dim("x", x, weight.shape[1], "d_in")
    check_same_dtype("x", x, "weight", weight)
    if bias is not None:
        check_float("bias", bias)
        check_same_dtype("x", x, "bias", bias)
        check_shape("bias", bias, (weight.shape[0],))
    # BEGIN SOLUTION
    y = einsum(x, weight, "... d_in, d_out d_in -> ... d_out")
    return y if bias is None else y + bias
    # END SOLUTION


def embedding(
    token_ids: Int[Tensor, "..."], weight: Float[Tensor, "vocab_size d_model"]
) -> Float[Tensor, "... d_model"]:
    """out[..., :] = weight[token_ids[...], :]: a row lookup. Returns weight's dtype."""
    if not isinstance(token_ids, Tensor) or token_ids.dtype not in (torch.int64, torch.int32):
        got = token_ids.dtype if isinstance(token_ids, Tensor) else type(token_ids).__name__
        # uint8 and bool tensors would index as masks, silently picking the wrong rows
        raise TypeError(f"token_ids must be an integer tensor of dtype torch.int64 or torch.int32, got {got}")
    check_float("weight", weight)
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D (vocab_size, d_model), got shape {tuple(weight.shape)}")
    if token_ids.numel() > 0:
        lo, hi = int(token_ids.min()), int(token_ids.max())
        if lo < 0 or hi >= weight.shape[0]:
            raise ValueError(
                f"token_ids must lie in [0, vocab_size={weight.shape[0]}), got values in [{lo}, {hi}]"
            )
    # BEGIN SOLUTION
    return weight[token_ids]
    # END SOLUTION


def silu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """SiLU(x) = x * sigmoid(x). Written as a product, not x / (1 + exp(-x)): both give -0.0 for
    large negative x, but the quotient's gradient is NaN there (exp(-x) = inf, inf / inf) while
    the product's is 0. Half types are computed in float32 and cast back once."""
    check_float("x", x)
    # BEGIN SOLUTION
    x_c = x.to(_compute_dtype(x))
    return (x_c * torch.sigmoid(x_c)).to(x.dtype)
    # END SOLUTION


def gelu(x: Float[Tensor, "..."], approximate: str = "none") -> Float[Tensor, "..."]:
    """GELU(x) = x * Phi(x) = 0.5 x erfc(-x / sqrt(2))                       (approximate="none")
    ~= 0.5 x (1 + tanh(u)) = x * sigmoid(2u),  u = sqrt(2/pi) (x + 0.044715 x^3)  (approximate="tanh").
    Hendrycks & Gimpel (2016). Written with erfc and sigmoid rather than 1 + erf and 1 + tanh,
    which cancel for x << 0. Half types are computed in float32."""
    check_float("x", x)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    # BEGIN SOLUTION
    x_c = x.to(_compute_dtype(x))
    if approximate == "tanh":
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c.pow(3))
        out = x_c * torch.sigmoid(2.0 * u)
    else:
        out = 0.5 * x_c * torch.erfc(-x_c / math.sqrt(2.0))
    return out.to(x.dtype)
    # END SOLUTION


def relu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """ReLU(x) = max(x, 0); NaN stays NaN, as in torch.relu. Given to students (not a graded
    component), like the activation registry below."""
    check_float("x", x)
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
    check_float("x", x)
    for name, w in (("w1", w1), ("w2", w2), ("w3", w3)):
        check_float(name, w)
        check_same_dtype("x", x, name, w)
    if w1.dim() != 2:
        raise ValueError(f"w1 must be 2-D (d_ff, d_model), got shape {tuple(w1.shape)}")
    d_ff, d_model = w1.shape
    check_last_dim("x", x, d_model, "d_model")
    check_shape("w3", w3, (d_ff, d_model))
    check_shape("w2", w2, (d_model, d_ff))
    act = get_activation(activation)
    # BEGIN SOLUTION
    gate = act(linear(x, w1))  # (..., d_ff)
    up = linear(x, w3)  # (..., d_ff)
    return linear(gate * up, w2)  # (..., d_model)
    # END SOLUTION


def positionwise_ffn(
    x: Float[Tensor, "... d_model"],
    w1: Float[Tensor, "d_ff d_model"],
    b1: Float[Tensor, "d_ff"] | None,
    w2: Float[Tensor, "d_model d_ff"],
    b2: Float[Tensor, "d_model"] | None,
    activation: str = "gelu",
) -> Float[Tensor, "... d_model"]:
    """FFN(x) = act(x W1^T + b1) W2^T + b2: the original position-wise FFN (Vaswani et al.
    2017 with ReLU; BERT and GPT-2 with GELU). Biases may be None. Runs in x's dtype."""
    check_float("x", x)
    check_float("w1", w1)
    check_float("w2", w2)
    if w1.dim() != 2:
        raise ValueError(f"w1 must be 2-D (d_ff, d_model), got shape {tuple(w1.shape)}")
    d_ff, d_model = w1.shape
    check_last_dim("x", x, d_model, "d_model")
    check_shape("w2", w2, (d_model, d_ff))
    check_same_dtype("x", x, "w1", w1)
    check_same_dtype("x", x, "w2", w2)
    for name, b, shape in (("b1", b1, (d_ff,)), ("b2", b2, (d_model,))):
        if b is not None:
            check_float(name, b)
            check_same_dtype("x", x, name, b)
            check_shape(name, b, shape)
    act = get_activation(activation)
    # BEGIN SOLUTION
    hidden = linear(x, w1, b1)  # (..., d_ff)
    return linear(act(hidden), w2, b2)  # (..., d_model)
    # END SOLUTION


def rmsnorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, "d_model"],
    eps: float = 1e-5,
    cast_before_gain: bool = False,
) -> Float[Tensor, "... d_model"]:
    """RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g   (Zhang & Sennrich 2019; eps inside the root).

    Cast order (default, CS336): upcast x and g to float32, normalise and multiply by g in
    float32, cast the product to x's dtype: one rounding. With cast_before_gain=True (Meta's
    llama, Hugging Face's LlamaRMSNorm): the normalised value is cast to x's dtype first and
    then multiplied by g in x's dtype: two roundings in bfloat16. The default is CS336's order
    because it rounds once (measured errors: tests/README.md). float64 stays float64.
    """
    check_float("x", x)
    check_float("weight", weight)
    check_shape("weight", weight, (x.shape[-1],) if x.dim() > 0 else (-1,))
    check_positive("eps", eps)
    # BEGIN SOLUTION
    in_dtype = x.dtype
    x_c = x.to(_compute_dtype(x))
    normed = x_c * torch.rsqrt(x_c.pow(2).mean(dim=-1, keepdim=True) + eps)
    if cast_before_gain:
        return normed.to(in_dtype) * weight.to(in_dtype)
    return (normed * weight.to(x_c.dtype)).to(in_dtype)
    # END SOLUTION


def layernorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, "d_model"],
    bias: Float[Tensor, "d_model"] | None,
    eps: float = 1e-5,
) -> Float[Tensor, "... d_model"]:
    """LayerNorm(x) = (x - mean(x)) / sqrt(var(x) + eps) * g + b, with the biased variance
    (divide by d_model), as torch.nn.LayerNorm (Ba et al. 2016). Upcast to float32, compute,
    cast the result to x's dtype once; float64 stays float64. bias may be None."""
    check_float("x", x)
    check_float("weight", weight)
    d_model = x.shape[-1] if x.dim() > 0 else -1
    check_shape("weight", weight, (d_model,))
    if bias is not None:
        check_float("bias", bias)
        check_shape("bias", bias, (d_model,))
    check_positive("eps", eps)
    # BEGIN SOLUTION
    in_dtype = x.dtype
    x_c = x.to(_compute_dtype(x))
    mean = x_c.mean(dim=-1, keepdim=True)
    var = (x_c - mean).pow(2).mean(dim=-1, keepdim=True)  # biased: divide by d_model
    out = (x_c - mean) * torch.rsqrt(var + eps) * weight.to(x_c.dtype)
    if bias is not None:
        out = out + bias.to(x_c.dtype)
    return out.to(in_dtype)
    # END SOLUTION


def softmax(x: Float[Tensor, "..."], dim: int = -1) -> Float[Tensor, "..."]:
    """softmax(x)_i = exp(x_i - max(x)) / sum_j exp(x_j - max(x)) along `dim`.

    Subtracting the max keeps exp from overflowing for large logits. Entries of -inf get
    probability 0; a row that is entirely -inf (fully masked) returns all zeros rather than
    NaN (torch.softmax returns NaN there). Half types are computed in float32 and cast back.
    """
    check_float("x", x)
    check_dim("x", x, dim)
    # BEGIN SOLUTION
    x_c = x.to(_compute_dtype(x))
    row_max = x_c.amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    exps = torch.exp(x_c - row_max)
    # A row with any finite entry sums to >= 1 (its max contributes exp(0)); a fully masked
    # row sums to 0, and dividing its zeros by 1 instead keeps them zeros.
    total = exps.sum(dim=dim, keepdim=True).clamp_min(1.0)
    return (exps / total).to(x.dtype)
    # END SOLUTION
