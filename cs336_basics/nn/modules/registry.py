"""Norms and feed-forward networks by name: one constructor per name, each building the module
from the same arguments (torchtitan's `build_norm(norm_type, dim, eps)` and timm's registries
build by name the same way):

    NORMS[name](d_model, eps, bias, device, dtype)                norm:  (..., d_model) -> (..., d_model)
    FFNS[name](d_model, d_ff, activation, bias, device, dtype)    ffn:   (..., d_model) -> (..., d_model)

An entry takes every argument and uses those its module has (RMSNorm has no bias, SwiGLU no
biases), and is annotated with the class it builds. FFNBlockConfig, TransformerBlock and
TransformerLM accept exactly these names, so a new kind is its module plus one entry here."""

from collections.abc import Callable

from torch import nn

from cs336_basics.nn.modules.layernorm import LayerNorm
from cs336_basics.nn.modules.positionwise_ffn import PositionWiseFFN
from cs336_basics.nn.modules.rmsnorm import RMSNorm
from cs336_basics.nn.modules.swiglu import SwiGLUFFN


def rmsnorm(d_model: int, eps: float = 1e-5, bias: bool = False, device=None, dtype=None) -> RMSNorm:
    """x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019): no bias, whatever `bias` says."""
    return RMSNorm(d_model, eps=eps, device=device, dtype=dtype)


def layernorm(d_model: int, eps: float = 1e-5, bias: bool = False, device=None, dtype=None) -> LayerNorm:
    """(x - mean) / sqrt(var + eps) * weight + bias (Ba et al. 2016), the bias only with bias=True."""
    return LayerNorm(d_model, eps=eps, bias=bias, device=device, dtype=dtype)


def swiglu(
    d_model: int, d_ff: int | None, activation: str = "silu", bias: bool = False, device=None, dtype=None
) -> SwiGLUFFN:
    """W2 (act(W1 x) * W3 x) (Shazeer 2020), bias-free whatever `bias` says; d_ff=None: the 8/3 rule."""
    return SwiGLUFFN(d_model, d_ff, activation=activation, device=device, dtype=dtype)


def positionwise(
    d_model: int, d_ff: int, activation: str = "gelu", bias: bool = True, device=None, dtype=None
) -> PositionWiseFFN:
    """act(x W1^T + b1) W2^T + b2 (Vaswani et al. 2017), the biases only with bias=True."""
    return PositionWiseFFN(d_model, d_ff, activation=activation, bias=bias, device=device, dtype=dtype)


NORMS: dict[str, Callable[..., nn.Module]] = {"rmsnorm": rmsnorm, "layernorm": layernorm}
FFNS: dict[str, Callable[..., nn.Module]] = {"swiglu": swiglu, "positionwise": positionwise}
