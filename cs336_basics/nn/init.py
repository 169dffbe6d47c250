"""Initialisation as explicit small functions (torchtitan style), one per parameter kind.

Both draw from a normal distribution truncated at +-3 standard deviations, as in CS336
assignment 1 section 3.4.1.
"""

import math

import torch
from torch import Tensor


def linear_std(d_in: int, d_out: int) -> float:
    """std = sqrt(2 / (d_in + d_out)) (Glorot-style fan average)."""
    return math.sqrt(2.0 / (d_in + d_out))


@torch.no_grad()
def trunc_normal_3std_(t: Tensor, std: float) -> Tensor:
    """t ~ N(0, std^2) truncated to [-3 std, 3 std], in place."""
    return torch.nn.init.trunc_normal_(t, mean=0.0, std=std, a=-3 * std, b=3 * std)


def init_linear_weight_(weight: Tensor, d_in: int | None = None, d_out: int | None = None) -> Tensor:
    """weight (d_out, d_in) ~ N(0, 2/(d_in+d_out)) truncated to [-3 std, 3 std], in place. d_in and
    d_out default to weight's shape; a tensor-parallel shard passes the full layer's."""
    rows, cols = weight.shape
    return trunc_normal_3std_(weight, linear_std(cols if d_in is None else d_in, rows if d_out is None else d_out))


def init_embedding_weight_(weight: Tensor) -> Tensor:
    """weight (vocab_size, d_model) ~ N(0, 1) truncated to [-3, 3], in place."""
    return trunc_normal_3std_(weight, 1.0)
