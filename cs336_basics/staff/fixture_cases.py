"""Every fixture case: its inputs (drawn from a fixed seed) and its reference output.

Inputs are drawn in float32 (or cast to the case's low-precision dtype) and stored as given
to the adapter. The expected output is the reference kernel applied to the same inputs
upcast to float64, stored as float32: a float32 or bfloat16 implementation is then measured
against an answer far more exact than itself, and the file does not depend on the CPU's
float32 summation order (so regenerating is bit-for-bit repeatable).

Witness inputs separate right from almost right; each says what it witnesses.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from cs336_basics.nn import functional as F

F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16


@dataclass(frozen=True)
class Case:
    name: str
    component: str
    adapter: str
    seed: int
    make: Callable[[torch.Generator], dict]  # -> the adapter's keyword arguments, float32
    dtype: torch.dtype = F32  # the inputs' (and the output's) dtype
    hidden: bool = False  # hidden cases are for grading and never ship to students


def _ffn_block_reference(d_model, d_ff, weights, in_features, norm, ffn, activation, eps, bias):
    w = weights
    if norm == "rmsnorm":
        h = F.rmsnorm(in_features, w["ffn_norm.weight"], eps)
    else:
        h = F.layernorm(in_features, w["ffn_norm.weight"], w.get("ffn_norm.bias"), eps)
    if ffn == "swiglu":
        h = F.swiglu_ffn(h, w["feed_forward.w1.weight"], w["feed_forward.w2.weight"], w["feed_forward.w3.weight"], activation)
    else:
        h = F.positionwise_ffn(
            h, w["feed_forward.w1.weight"], w.get("feed_forward.b1"), w["feed_forward.w2.weight"], w.get("feed_forward.b2"), activation
        )
    return in_features + h


# The reference for each adapter, written with the kernels (the adapters go through the modules).
REFERENCE: dict[str, Callable[..., Tensor]] = {
    "run_linear": lambda d_in, d_out, weights, in_features: F.linear(in_features, weights),
    "run_embedding": lambda vocab_size, d_model, weights, token_ids: F.embedding(token_ids, weights),
    "run_silu": lambda in_features: F.silu(in_features),
    "run_gelu": lambda in_features, approximate="none": F.gelu(in_features, approximate),
    "run_softmax": lambda in_features, dim: F.softmax(in_features, dim),
    "run_rmsnorm": lambda d_model, eps, weights, in_features: F.rmsnorm(in_features, weights, eps),
    "run_layernorm": lambda d_model, eps, weights, biases, in_features: F.layernorm(in_features, weights, biases, eps),
    "run_swiglu": lambda d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features: F.swiglu_ffn(
        in_features, w1_weight, w2_weight, w3_weight
    ),
    "run_positionwise_feedforward": lambda d_model, d_ff, w1_weight, b1, w2_weight, b2, in_features, activation="gelu": (
        F.positionwise_ffn(in_features, w1_weight, b1, w2_weight, b2, activation)
    ),
    "run_ffn_block": _ffn_block_reference,
}


def randn(g: torch.Generator, *shape: int, std: float = 1.0, mean: float = 0.0) -> Tensor:
    return torch.randn(*shape, generator=g) * std + mean


def linear_weight(g: torch.Generator, d_out: int, d_in: int) -> Tensor:
    """A weight at the scale of the Linear init, so activations stay O(1)."""
    return randn(g, d_out, d_in, std=(2.0 / (d_in + d_out)) ** 0.5)


# ---- builders, one per adapter; shapes are arguments so public and hidden cases share them ----


def linear_case(batch: tuple[int, ...], d_in: int, d_out: int, x_std: float = 1.0):
    return lambda g: dict(
        d_in=d_in, d_out=d_out, weights=linear_weight(g, d_out, d_in), in_features=randn(g, *batch, d_in, std=x_std)
    )


def embedding_case(batch: tuple[int, ...], vocab_size: int, d_model: int):
    def make(g):
        ids = torch.randint(0, vocab_size, batch, generator=g)
        ids.view(-1)[:2] = torch.tensor([0, vocab_size - 1])  # witness: both ends of the vocabulary
        return dict(vocab_size=vocab_size, d_model=d_model, weights=randn(g, vocab_size, d_model), token_ids=ids)

    return make


def pointwise_case(batch: tuple[int, ...], std: float, extremes: tuple[float, ...] = (), **scalars):
    def make(g):
        x = randn(g, *batch, std=std)
        if extremes:  # witness values written into the first entries
            x.view(-1)[: len(extremes)] = torch.tensor(extremes)
        return dict(in_features=x, **scalars)

    return make


def softmax_case(batch: tuple[int, ...], dim: int, std: float, mean: float = 0.0, mask_fraction: float = 0.0):
    def make(g):
        x = randn(g, *batch, std=std, mean=mean)
        if mask_fraction:  # -inf entries, never a whole slice along dim
            mask = torch.rand(*batch, generator=g) < mask_fraction
            mask.select(dim, 0).fill_(False)
            x = x.masked_fill(mask, float("-inf"))
        return dict(in_features=x, dim=dim)

    return make


def rmsnorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0):
    return lambda g: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(g, d_model, std=0.5, mean=1.0),  # witness: a gain that is not all ones
        in_features=randn(g, *batch, d_model, std=x_std),
    )


def layernorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0, x_mean: float = 0.0):
    return lambda g: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(g, d_model, std=0.5, mean=1.0),
        biases=randn(g, d_model, std=0.5),
        in_features=randn(g, *batch, d_model, std=x_std, mean=x_mean),
    )


def swiglu_case(batch: tuple[int, ...], d_model: int, d_ff: int, x_std: float = 1.0):
    return lambda g: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(g, d_ff, d_model),
        w2_weight=linear_weight(g, d_model, d_ff),
        w3_weight=linear_weight(g, d_ff, d_model),
        in_features=randn(g, *batch, d_model, std=x_std),
    )


def positionwise_case(batch: tuple[int, ...], d_model: int, d_ff: int, activation: str = "gelu"):
    return lambda g: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(g, d_ff, d_model),
        b1=randn(g, d_ff, std=0.5),
        w2_weight=linear_weight(g, d_model, d_ff),
        b2=randn(g, d_model, std=0.5),
        in_features=randn(g, *batch, d_model),
        activation=activation,
    )


def ffn_block_case(batch: tuple[int, ...], d_model: int, d_ff: int, norm: str, ffn: str, activation: str, bias: bool = False):
    def make(g):
        w = {"ffn_norm.weight": randn(g, d_model, std=0.5, mean=1.0)}
        if norm == "layernorm" and bias:
            w["ffn_norm.bias"] = randn(g, d_model, std=0.5)
        w["feed_forward.w1.weight"] = linear_weight(g, d_ff, d_model)
        w["feed_forward.w2.weight"] = linear_weight(g, d_model, d_ff)
        if ffn == "swiglu":
            w["feed_forward.w3.weight"] = linear_weight(g, d_ff, d_model)
        elif bias:
            w["feed_forward.b1"] = randn(g, d_ff, std=0.5)
            w["feed_forward.b2"] = randn(g, d_model, std=0.5)
        return dict(
            d_model=d_model, d_ff=d_ff, weights=w, in_features=randn(g, *batch, d_model, std=2.0, mean=0.5),
            norm=norm, ffn=ffn, activation=activation, eps=1e-5, bias=bias,
        )

    return make


B = (4, 12)  # CS336's (batch, sequence) for its snapshot tests
BIG = 1e4  # a logit or pre-activation far outside exp's float16/bfloat16 range

PUBLIC_CASES = [
    Case("linear", "linear", "run_linear", 1, linear_case(B, 64, 128)),
    Case("linear_4d", "linear", "run_linear", 2, linear_case((2, 3, 5), 48, 24, x_std=3.0)),
    Case("embedding", "embedding", "run_embedding", 3, embedding_case(B, 100, 64)),
    Case("silu", "silu", "run_silu", 4, pointwise_case(B + (64,), std=3.0)),
    Case("silu_bf16", "silu", "run_silu", 5, pointwise_case(B + (64,), std=3.0), dtype=BF16),
    # witness: exp(-x) overflows for x << 0 and exp(x) for x >> 0; the output must stay finite
    Case("silu_extremes", "silu", "run_silu", 24, pointwise_case((8,), std=1.0, extremes=(-BIG, -100.0, -20.0, -0.0, 1e-30, 20.0, 100.0, BIG))),
    Case("silu_extremes_fp16", "silu", "run_silu", 25,
         pointwise_case((8,), std=1.0, extremes=(-BIG, -100.0, -20.0, -0.0, 1e-4, 20.0, 100.0, BIG)), dtype=F16),
    Case("gelu", "gelu", "run_gelu", 6, pointwise_case(B + (64,), std=3.0, approximate="none")),
    Case("gelu_tanh", "gelu", "run_gelu", 7, pointwise_case(B + (64,), std=3.0, approximate="tanh")),
    Case("softmax", "softmax", "run_softmax", 8, softmax_case(B + (64,), dim=-1, std=2.0)),
    Case("softmax_dim0", "softmax", "run_softmax", 9, softmax_case((10, 3, 7), dim=0, std=2.0)),
    Case("softmax_large_logits", "softmax", "run_softmax", 10, softmax_case((6, 50), dim=-1, std=BIG, mean=BIG)),
    Case("softmax_masked", "softmax", "run_softmax", 11, softmax_case((8, 16), dim=-1, std=2.0, mask_fraction=0.5)),
    Case("rmsnorm", "rmsnorm", "run_rmsnorm", 12, rmsnorm_case(B, 64, eps=1e-5)),
    # witness: activations of size ~1e-3 make mean(x^2) ~ eps, so where eps goes matters
    Case("rmsnorm_small_scale", "rmsnorm", "run_rmsnorm", 13, rmsnorm_case(B, 64, eps=1e-5, x_std=1e-3)),
    Case("rmsnorm_custom_eps", "rmsnorm", "run_rmsnorm", 14, rmsnorm_case((3, 5), 32, eps=0.25)),
    Case("rmsnorm_bf16", "rmsnorm", "run_rmsnorm", 15, rmsnorm_case(B, 64, eps=1e-5, x_std=4.0), dtype=BF16),
    # witness: x ~ 300 makes x^2 overflow float16 (max 65504) unless the sum is taken in float32
    Case("rmsnorm_fp16_large", "rmsnorm", "run_rmsnorm", 26, rmsnorm_case(B, 64, eps=1e-5, x_std=300.0), dtype=F16),
    # witness: a large common offset separates LayerNorm (subtracts it) from RMSNorm (does not)
    Case("layernorm", "layernorm", "run_layernorm", 16, layernorm_case(B, 64, eps=1e-5, x_std=2.0, x_mean=3.0)),
    Case("layernorm_bf16", "layernorm", "run_layernorm", 17, layernorm_case(B, 64, eps=1e-5, x_std=2.0, x_mean=1.0), dtype=BF16),
    # witness: a mean of 64 with spread 1 in bfloat16: a mean taken (and subtracted) in bfloat16
    # is off by up to a quarter, which swamps the centred values; float32 inside is exact enough
    Case("layernorm_bf16_offset", "layernorm", "run_layernorm", 27, layernorm_case(B, 64, eps=1e-5, x_std=1.0, x_mean=64.0), dtype=BF16),
    Case("swiglu", "swiglu", "run_swiglu", 18, swiglu_case(B, 64, 128)),
    Case("swiglu_4d", "swiglu", "run_swiglu", 19, swiglu_case((2, 2, 3), 40, 96, x_std=3.0)),
    Case("swiglu_bf16", "swiglu", "run_swiglu", 20, swiglu_case(B, 64, 128), dtype=BF16),
    Case("positionwise_ffn", "positionwise_ffn", "run_positionwise_feedforward", 21, positionwise_case(B, 64, 256)),
    Case("ffn_block_llama", "ffn_block", "run_ffn_block", 22, ffn_block_case(B, 64, 192, "rmsnorm", "swiglu", "silu")),
    Case("ffn_block_original", "ffn_block", "run_ffn_block", 23,
         ffn_block_case(B, 64, 256, "layernorm", "positionwise", "gelu", bias=True)),
]

