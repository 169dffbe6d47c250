"""Linear and Embedding: their mistakes (the kernels' and the constructors' initialisation), accepted
variants and alternative solutions."""

import math

import torch
from torch import nn

from cs336_basics.nn import Embedding, Linear
from cs336_basics.nn import functional as F
from cs336_basics.nn.init import init_linear_weight_, trunc_normal_3std_

from . import alternative, mistake, plus_bias, variant

# ---- linear --------------------------------------------------------------------------------------


@mistake(
    "linear-transposed_weight",
    F,
    "linear",
    raises=(RuntimeError,),
    diagnosis="Linear multiplying by W instead of W^T (x @ weight, with weight stored (d_out, d_in))",
)
def linear_transposed(x, weight, bias=None):
    return plus_bias(x @ weight, bias)


NO_BIASES = "an output without the biases added (check that each bias given is added)"


@mistake("linear-bias_ignored", F, "linear", diagnosis="Linear ignoring the bias it was given", shows=NO_BIASES)
def linear_bias_ignored(x, weight, bias=None):
    return x @ weight.T


@mistake(
    "linear-stray_bias",
    F,
    "linear",
    diagnosis="Linear with a bias that was never loaded (an unused torch.nn.Linear-style bias left in)",
)
def linear_with_stray_bias(x, weight, bias=None):
    # torch.nn.Linear's default bias, left in and never loaded: U(-1/sqrt(d_in), 1/sqrt(d_in))
    g = torch.Generator().manual_seed(0)
    bound = 1 / math.sqrt(weight.shape[1])
    stray = (torch.rand(weight.shape[0], generator=g) * 2 - 1) * bound
    return plus_bias(x @ weight.T + stray.to(x.dtype), bias)


@mistake(
    "linear-crash_on_2d_or_4d_input",
    F,
    "linear",
    raises=(RuntimeError,),
    diagnosis="Linear written for 3-D input only (it must take any number of leading dimensions)",
)
def linear_only_3d(x, weight, bias=None):
    return plus_bias(torch.einsum("bsi,oi->bso", x, weight), bias)


# Initialisation: a module constructor that creates the right parameters with the wrong starting
# values (CS336 a1 section 3.4.1: Linear ~ N(0, 2 / (d_in + d_out)) truncated at +-3 sigma, Embedding
# ~ N(0, 1) truncated at +-3, biases 0). The init functions of cs336_basics/nn/init.py are given; the
# constructors that call them are the student's. Only the init-check cases see these (every other
# case loads its weights).


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


@variant("linear-matmul", F, "linear")
def linear_matmul(x, weight, bias=None):
    return plus_bias(x @ weight.transpose(-1, -2), bias)


alternative(
    "linear",
    "linear",
    """
    out = torch.einsum("...i,oi->...o", x, weight)
    if bias is not None:
        out += bias
    return out
    """,
)


# ---- embedding -----------------------------------------------------------------------------------


@mistake("embedding-off_by_one", F, "embedding", diagnosis="Embedding looking up row id - 1 instead of row id")
def embedding_off_by_one(token_ids, weight):
    return weight[token_ids - 1]


@mistake(
    "embedding-ids_assumed_2d",
    F,
    "embedding",
    diagnosis="Embedding that assumes (batch, sequence) ids: the rows reshaped to (ids.shape[0], -1, d_model) "
    "instead of ids.shape + (d_model,)",
)
def embedding_ids_assumed_2d(token_ids, weight):
    return weight[token_ids.reshape(-1)].reshape(token_ids.shape[0], -1, weight.shape[1])


@mistake(
    "embedding-one_hot_matmul_in_bf16",
    F,
    "embedding",
    diagnosis="Embedding as a one-hot matrix product in bfloat16, which rounds the rows",
)
def embedding_one_hot_matmul_in_input_dtype(token_ids, weight):
    one_hot = torch.nn.functional.one_hot(token_ids, weight.shape[0]).to(torch.bfloat16)
    return (one_hot @ weight.to(torch.bfloat16)).to(weight.dtype)


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
