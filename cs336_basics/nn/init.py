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
def init_linear_weight_(weight: Tensor) -> Tensor:
    """weight (d_out, d_in) ~ N(0, 2/(d_in+d_out)) truncated to [-3 std, 3 std], in place."""
    d_out, d_in = weight.shape
    std = linear_std(d_in, d_out)
    return torch.nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-3 * std, b=3 * std)


@torch.no_grad()
def init_embedding_weight_(weight: Tensor) -> Tensor:
    """weight (vocab_size, d_model) ~ N(0, 1) truncated to [-3, 3], in place."""
    return torch.nn.init.trunc_normal_(weight, mean=0.0, std=1.0, a=-3.0, b=3.0)
