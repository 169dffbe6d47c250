"""Linear (with and without a bias) and Embedding: the builders of their inputs, then their cases
and what they grade of the public tests, then their mistakes (the kernels' and the constructors'
initialisation), accepted variants and alternative solutions."""

import math
from functools import partial

import torch
from torch import nn

from cs336_basics.nn import Embedding, Linear
from cs336_basics.nn import functional as F
from cs336_basics.nn.init import init_linear_weight_, trunc_normal_3std_
from cs336_basics.staff.cases.case import BF16, EXACT, EXACT_INT64, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, init_case, linear_weight, randint, randn
from cs336_basics.staff.mistakes import alternative, mistake, plus_bias, variant


def linear_case(batch: tuple[int, ...], d_in: int, d_out: int, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, weights=linear_weight(rng, d_out, d_in), in_features=randn(rng, *batch, d_in, std=x_std)
    )


def linear_bias_case(batch: tuple[int, ...], d_in: int, d_out: int) -> Make:
    return lambda rng: dict(
        d_in=d_in,
        d_out=d_out,
        weights=linear_weight(rng, d_out, d_in),
        biases=randn(rng, d_out, std=0.5),
        in_features=randn(rng, *batch, d_in),
    )


def embedding_case(batch: tuple[int, ...], vocab_size: int, d_model: int) -> Make:
    def make(rng):
        ids = randint(rng, 0, vocab_size, batch)
        ids.view(-1)[:2] = torch.tensor([0, vocab_size - 1])  # witness: both ends of the vocabulary
        return dict(vocab_size=vocab_size, d_model=d_model, weights=randn(rng, vocab_size, d_model), token_ids=ids)

    return make


def _repeat_ids(kw: dict) -> None:  # ids 0 and vocab-1 already first; repeat them and one more id
    kw["token_ids"][2:6] = torch.tensor([5, 5, 0, kw["vocab_size"] - 1])


linear = partial(Case, component="linear", adapter="run_linear")
linear_with_bias = partial(Case, component="linear", adapter="run_linear_with_bias")
embedding = partial(Case, component="embedding", adapter="run_embedding")
linear_init = partial(Case, component="linear", adapter="run_linear_init_checks", **EXACT_INT64)
embedding_init = partial(Case, component="embedding", adapter="run_embedding_init_checks", **EXACT_INT64)

CASES = [
    # witness: a square weight, so multiplying by W instead of W^T gives a wrong output (which can be
    # named), not a shape error; linear_4d's weight is not square
    linear("linear", seed=1, make=linear_case(B, 64, 64), floor=6.2e-7),
    linear("linear_4d", seed=2, make=linear_case((2, 3, 5), 48, 24, x_std=3.0), floor=5.3e-7),
    linear("linear_2d_bf16", seed=100, make=linear_case((7,), 32, 48), floor=2.7e-3, dtype=BF16),
    linear("linear_f64", seed=101, make=linear_case((3,), 16, 24, x_std=2.0), floor=1.5e-16, dtype=F64),
    # Linear(bias=True) (beyond CS336; the position-wise FFN's layers)
    linear_with_bias("linear_with_bias", seed=148, make=linear_bias_case(B, 32, 40), floor=3.8e-7),
    linear_with_bias(
        "linear_with_bias_4d_f64", seed=149, make=linear_bias_case((2, 3, 4), 12, 20), floor=1.9e-16, dtype=F64
    ),
    # initialisation (section 3.4.1): 1 per check of adapter_checks.INIT_CHECKS that holds, from 5 standard
    # errors of a sample of d_in * d_out draws (a correct init fails one with probability < 1e-6).
    # witness: d_in != d_out, so a std from d_in alone is 26% off against a bound of 0.8%
    linear_init("linear_init", seed=193, make=init_case(d_in=768, d_out=320)),
    linear_init("linear_init_square", seed=210, make=init_case(d_in=512, d_out=512)),
    # hidden: odd sizes, a 1-D input, bfloat16 with 4-D input
    linear("linear_odd", hidden=True, seed=1001, make=linear_case((5,), 7, 13), floor=9.3e-8),
    linear("linear_1d", hidden=True, seed=1002, make=linear_case((), 33, 17), floor=9.2e-8),
    linear(
        "linear_4d_bf16",
        hidden=True,
        seed=1003,
        make=linear_case((2, 3, 4), 24, 10, x_std=2.0),
        floor=2.5e-3,
        dtype=BF16,
    ),
    linear_init("linear_init_wide_out", hidden=True, seed=1196, make=init_case(d_in=200, d_out=1500)),
    embedding("embedding", seed=3, make=embedding_case(B, 100, 64), floor=EXACT),
    embedding("embedding_unbatched_ids_bf16", seed=102, make=embedding_case((9,), 50, 24), floor=EXACT, dtype=BF16),
    embedding("embedding_3d_ids_f64", seed=103, make=embedding_case((2, 2, 3), 20, 8), floor=EXACT, dtype=F64),
    # initialisation: N(0, 1) truncated at +-3 (adapter_checks.INIT_CHECKS), over vocab_size * d_model draws
    embedding_init("embedding_init", seed=194, make=init_case(vocab_size=500, d_model=256)),
    embedding_init("embedding_init_narrow", seed=211, make=init_case(vocab_size=1000, d_model=128)),
    # hidden: repeated ids and both ends of an odd vocabulary; 1-D and 3-D ids; bfloat16 table
    embedding(
        "embedding_repeated_ids",
        hidden=True,
        seed=1011,
        make=edited(embedding_case((9,), 37, 13), _repeat_ids),
        floor=EXACT,
    ),
    embedding("embedding_3d_ids", hidden=True, seed=1012, make=embedding_case((2, 3, 5), 11, 7), floor=EXACT),
    embedding("embedding_bf16", hidden=True, seed=1013, make=embedding_case((4, 6), 50, 16), floor=EXACT, dtype=BF16),
    embedding_init("embedding_init_tall", hidden=True, seed=1197, make=init_case(vocab_size=3000, d_model=40)),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "linear": {
        "test_linear_maps_d_in_features_to_d_out": ("linear", "linear_odd"),
        "test_linear_takes_any_number_of_leading_dimensions": ("linear_4d", "linear_f64", "linear_1d"),
        "test_linear_is_x_times_the_weight_transposed": ("linear_f64", "linear"),
        "test_linear_adds_the_bias": ("linear_with_bias", "linear_with_bias_4d_f64"),
        "test_linear_init_weights_have_mean_zero": ("linear_init", "linear_init_wide_out"),
        "test_linear_init_weight_std_is_that_of_sqrt_2_over_d_in_plus_d_out_truncated_at_3_std": (
            "linear_init",
            "linear_init_wide_out",
        ),
        "test_linear_init_weights_lie_within_3_std": ("linear_init", "linear_init_wide_out"),
        "test_linear_init_bias_is_zero": ("linear_init", "linear_init_wide_out"),
        "test_linear_matches_fixture": ("linear", "linear_4d", "linear_2d_bf16", "linear_f64", "linear_with_bias"),
        "test_linear_kernel_matches_torch_builtin": ("linear_f64", "linear_with_bias_4d_f64"),
        "test_linear_module_has_weight_out_by_in": ("linear", "linear_odd"),
        "test_linear_module_uses_given_dtype": ("linear_2d_bf16", "linear_f64"),
        "test_linear_loads_torch_nn_linear_state_dict_and_matches_it": ("linear_with_bias",),
    },
    "embedding": {
        "test_embedding_returns_one_row_per_id": ("embedding_unbatched_ids_bf16", "embedding_3d_ids_f64"),
        "test_embedding_returns_the_rows_the_ids_name": ("embedding", "embedding_3d_ids_f64"),
        "test_embedding_copies_the_rows_exactly": ("embedding_3d_ids_f64", "embedding_unbatched_ids_bf16"),
        "test_embedding_init_weights_have_mean_zero": ("embedding_init", "embedding_init_tall"),
        "test_embedding_init_weight_std_is_that_of_a_unit_normal_truncated_at_3": (
            "embedding_init",
            "embedding_init_tall",
        ),
        "test_embedding_init_weights_lie_within_3": ("embedding_init", "embedding_init_tall"),
        "test_embedding_matches_fixture": ("embedding", "embedding_unbatched_ids_bf16", "embedding_3d_ids_f64"),
        "test_embedding_kernel_matches_torch_builtin": ("embedding_3d_ids_f64", "embedding_repeated_ids"),
        "test_embedding_module_has_weight_vocab_by_d_model": ("embedding",),
        "test_embedding_loads_torch_nn_embedding_state_dict_and_matches_it": ("embedding",),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


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
