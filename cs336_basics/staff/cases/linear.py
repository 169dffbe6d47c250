"""Linear (with and without a bias) and Embedding: the builders of their inputs, then their cases."""

from functools import partial

import torch

from cs336_basics.staff.cases.case import BF16, EXACT, EXACT_INT64, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, init_case, linear_weight, randint, randn


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
