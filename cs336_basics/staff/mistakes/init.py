"""Initialisation mistakes: a module constructor that creates the right parameters with the wrong
starting values (CS336 a1 section 3.4.1: Linear ~ N(0, 2 / (d_in + d_out)) truncated at +-3
sigma, Embedding ~ N(0, 1) truncated at +-3, biases 0). The init functions of
cs336_basics/nn/init.py are given; the constructors that call them are the student's. Only the init-check
cases see these (every other case loads its weights)."""

import math

import torch
from torch import nn

from cs336_basics.nn import Embedding, LayerNorm, Linear
from cs336_basics.nn.init import init_linear_weight_, trunc_normal_3std_

from . import mistake


def _linear(self, in_features, out_features, device, dtype, bias, init_weight, init_bias):
    """Linear's parameters, as its constructor makes them, with the given initialisers."""
    nn.Module.__init__(self)
    self.in_features, self.out_features = in_features, out_features
    self.weight = nn.Parameter(init_weight(torch.empty(out_features, in_features, device=device, dtype=dtype)))
    self.bias = nn.Parameter(init_bias(torch.empty(out_features, device=device, dtype=dtype))) if bias else None


@mistake(
    "linear-init_std_from_d_in_only",
    Linear,
    "__init__",
    diagnosis="Linear initialised with std 1/sqrt(d_in) (fan-in only) instead of sqrt(2 / (d_in + d_out))",
)
def linear_init_std_from_d_in(self, in_features, out_features, device=None, dtype=None, *, bias=False):
    std = 1 / math.sqrt(in_features)
    _linear(self, in_features, out_features, device, dtype, bias, lambda w: trunc_normal_3std_(w, std), nn.init.zeros_)


@mistake(
    "linear-init_not_truncated",
    Linear,
    "__init__",
    diagnosis="Linear initialised from the normal distribution without truncating it at +-3 std",
)
def linear_init_not_truncated(self, in_features, out_features, device=None, dtype=None, *, bias=False):
    std = math.sqrt(2 / (in_features + out_features))
    _linear(self, in_features, out_features, device, dtype, bias, lambda w: nn.init.normal_(w, 0, std), nn.init.zeros_)


@mistake(
    "linear-init_bias_ones",
    Linear,
    "__init__",
    diagnosis="Linear with its bias initialised to ones instead of zeros",
)
def linear_init_bias_ones(self, in_features, out_features, device=None, dtype=None, *, bias=False):
    _linear(self, in_features, out_features, device, dtype, bias, init_linear_weight_, nn.init.ones_)


@mistake(
    "embedding-init_not_truncated",
    Embedding,
    "__init__",
    diagnosis="Embedding initialised from N(0, 1) without truncating it at +-3",
)
def embedding_init_not_truncated(self, num_embeddings, embedding_dim, device=None, dtype=None):
    nn.Module.__init__(self)
    self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
    weight = torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype)
    self.weight = nn.Parameter(nn.init.normal_(weight, 0.0, 1.0))


@mistake(
    "layernorm-init_bias_ones",
    LayerNorm,
    "__init__",
    diagnosis="LayerNorm with its bias initialised to ones instead of zeros",
)
def layernorm_init_bias_ones(self, d_model, eps=1e-5, bias=True, device=None, dtype=None):
    nn.Module.__init__(self)
    self.d_model, self.eps = d_model, eps
    self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
    if bias:
        self.bias = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
    else:
        self.register_parameter("bias", None)
