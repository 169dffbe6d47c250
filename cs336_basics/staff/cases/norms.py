"""RMSNorm and LayerNorm: the builders of their inputs, then their cases."""

from functools import partial

from cs336_basics.staff.cases.case import BF16, EXACT_INT64, F16, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, init_case, randn


def rmsnorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(rng, d_model, std=0.5, mean=1.0),  # witness: a gain that is not all ones
        in_features=randn(rng, *batch, d_model, std=x_std),
    )


def layernorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0, x_mean: float = 0.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(rng, d_model, std=0.5, mean=1.0),
        biases=randn(rng, d_model, std=0.5),
        in_features=randn(rng, *batch, d_model, std=x_std, mean=x_mean),
    )


def _zero_row_and_spike(kw: dict) -> None:
    kw["in_features"][0] = 0.0  # RMS 0: output 0 (eps > 0), not NaN
    kw["in_features"][1, 3] = 1e6  # one entry dominates: it maps to ~sqrt(d_model) * g, the rest to ~0


def _constant_row(kw: dict) -> None:
    # variance 0: the output is the bias. 2.75 is dyadic, so every float32 partial sum of the row
    # is exact and the mean is exactly 2.75 in any summation order (with 3.7 a 1-ulp error in the
    # mean, times 1/sqrt(eps), shows as a 1.2e-4 scaled error: a rounding, not a mistake).
    kw["in_features"][0] = 2.75


rmsnorm = partial(Case, component="rmsnorm", adapter="run_rmsnorm")
layernorm = partial(Case, component="layernorm", adapter="run_layernorm")
rmsnorm_init = partial(Case, component="rmsnorm", adapter="run_rmsnorm_init_checks", **EXACT_INT64)
layernorm_without_bias = partial(Case, component="layernorm", adapter="run_layernorm_without_bias")
layernorm_init = partial(Case, component="layernorm", adapter="run_layernorm_init_checks", **EXACT_INT64)

CASES = [
    rmsnorm("rmsnorm", seed=12, make=rmsnorm_case(B, 64, eps=1e-5), floor=1.4e-7),
    # witness: activations of size ~1e-3 make mean(x^2) ~ eps, so where eps goes matters
    rmsnorm("rmsnorm_small_scale", seed=13, make=rmsnorm_case(B, 64, eps=1e-5, x_std=1e-3), floor=1.3e-7),
    rmsnorm("rmsnorm_custom_eps", seed=14, make=rmsnorm_case((3, 5), 32, eps=0.25), floor=1.2e-7),
    rmsnorm("rmsnorm_bf16", seed=15, make=rmsnorm_case(B, 64, eps=1e-5, x_std=4.0), floor=3.0e-3, dtype=BF16),
    # witness: x ~ 300 makes x^2 overflow float16 (max 65504) unless the sum is taken in float32
    rmsnorm("rmsnorm_fp16_large", seed=26, make=rmsnorm_case(B, 64, eps=1e-5, x_std=300.0), floor=3.7e-4, dtype=F16),
    # a fixed reduction axis (dim=2) fails both; activations of ~0.05 make eps = 1e-3 matter
    rmsnorm("rmsnorm_rows_f64", seed=108, make=rmsnorm_case((7,), 24, eps=1e-6), floor=0.0, dtype=F64),
    rmsnorm("rmsnorm_4d_eps", seed=109, make=rmsnorm_case((2, 3, 4), 16, eps=1e-3, x_std=0.05), floor=1.4e-7),
    # initialisation: the gain 1 (adapter_checks.INIT_CHECKS)
    rmsnorm_init("rmsnorm_init", seed=195, make=init_case(seeded=False, d_model=64)),
    # hidden: a zero row and a row with one huge entry; 1-D with another eps; bfloat16 4-D
    rmsnorm(
        "rmsnorm_zero_row_and_spike",
        hidden=True,
        seed=1051,
        make=edited(rmsnorm_case((4,), 33, eps=1e-5), _zero_row_and_spike),
        floor=8.8e-8,
    ),
    rmsnorm("rmsnorm_1d", hidden=True, seed=1052, make=rmsnorm_case((), 7, eps=1e-6), floor=4.3e-8),
    rmsnorm(
        "rmsnorm_4d_bf16",
        hidden=True,
        seed=1053,
        make=rmsnorm_case((2, 3, 4), 20, eps=1e-5, x_std=3.0),
        floor=2.3e-3,
        dtype=BF16,
    ),
    # witness: a large common offset separates LayerNorm (subtracts it) from RMSNorm (does not)
    layernorm("layernorm", seed=16, make=layernorm_case(B, 64, eps=1e-5, x_std=2.0, x_mean=3.0), floor=4.3e-7),
    layernorm(
        "layernorm_bf16", seed=17, make=layernorm_case(B, 64, eps=1e-5, x_std=2.0, x_mean=1.0), floor=2.9e-3, dtype=BF16
    ),
    # witness: a mean of 64 with spread 1 in bfloat16: a mean taken (and subtracted) in bfloat16
    # is off by up to a quarter, which swamps the centred values; float32 inside is exact enough
    layernorm(
        "layernorm_bf16_offset",
        seed=27,
        make=layernorm_case(B, 64, eps=1e-5, x_std=1.0, x_mean=64.0),
        floor=2.9e-3,
        dtype=BF16,
    ),
    # witness: a mean of 1000 against a spread of 1 in float32: the variance as E[x^2] - E[x]^2
    # subtracts two numbers of ~1e6 whose float32 rounding (~0.06 each) is the size of the variance
    # itself; E[(x - mean)^2] never forms them (Welford 1962; torch.nn.LayerNorm centres first)
    layernorm(
        "layernorm_large_mean",
        seed=163,
        make=layernorm_case(B, 64, eps=1e-5, x_std=1.0, x_mean=1000.0),
        floor=2.0e-4,
    ),
    # eps comparable with the variance: a hard-coded 1e-5 fails
    layernorm(
        "layernorm_2d_f64_eps",
        seed=110,
        make=layernorm_case((7,), 24, eps=0.1, x_std=0.5, x_mean=1.0),
        floor=7.6e-16,
        dtype=F64,
    ),
    layernorm(
        "layernorm_4d_small_eps",
        seed=111,
        make=layernorm_case((2, 3, 4), 16, eps=1e-3, x_std=0.05, x_mean=-0.2),
        floor=7.5e-7,
    ),
    # LayerNorm(bias=False), as torch.nn.LayerNorm(bias=False): a gain and no bias parameter, which
    # the strict load checks
    layernorm_without_bias(
        "layernorm_without_bias",
        seed=201,
        make=edited(layernorm_case((3, 4), 24, eps=1e-5, x_mean=1.0), lambda kw: kw.pop("biases")),
        floor=3.6e-7,
    ),
    # one feature: x - mean(x) = 0, the output is the bias exactly
    layernorm(
        "layernorm_one_feature",
        seed=219,
        make=layernorm_case((4, 3), 1, eps=1e-5, x_std=500.0, x_mean=1.0),
        floor=0.0,
    ),
    # initialisation: the gain 1 and the bias 0, as torch.nn.LayerNorm's (adapter_checks.INIT_CHECKS)
    layernorm_init("layernorm_init", seed=196, make=init_case(seeded=False, d_model=48)),
    # hidden: a constant row (-> bias); 4-D with a large eps; 1-D bfloat16 with an offset
    layernorm(
        "layernorm_constant_row",
        hidden=True,
        seed=1061,
        make=edited(layernorm_case((5,), 33, eps=1e-5, x_mean=2.0), _constant_row),
        floor=2.3e-7,
    ),
    layernorm("layernorm_4d_eps", hidden=True, seed=1062, make=layernorm_case((2, 3, 4), 9, eps=1e-2), floor=1.4e-7),
    layernorm(
        "layernorm_1d_bf16",
        hidden=True,
        seed=1063,
        make=layernorm_case((), 40, eps=1e-5, x_std=2.0, x_mean=4.0),
        floor=1.2e-3,
        dtype=BF16,
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "rmsnorm": {
        "test_rmsnorm_returns_the_shape_and_dtype_of_its_input": ("rmsnorm_rows_f64", "rmsnorm_fp16_large"),
        "test_rmsnorm_of_a_row_is_the_row_over_its_root_mean_square": ("rmsnorm", "rmsnorm_rows_f64"),
        "test_rmsnorm_normalises_each_row_over_its_own_last_dimension": ("rmsnorm", "rmsnorm_4d_eps"),
        "test_rmsnorm_multiplies_by_the_gain": ("rmsnorm", "rmsnorm_rows_f64"),
        "test_rmsnorm_adds_eps_inside_the_square_root": ("rmsnorm_small_scale", "rmsnorm_custom_eps"),
        "test_rmsnorm_computes_float16_inputs_in_float32": ("rmsnorm_fp16_large",),
        "test_rmsnorm_init_gain_is_one": ("rmsnorm_init",),
        "test_rmsnorm_matches_fixture": ("rmsnorm", "rmsnorm_small_scale", "rmsnorm_custom_eps", "rmsnorm_bf16"),
        "test_rmsnorm_kernel_matches_torch_builtin": ("rmsnorm_rows_f64", "rmsnorm_4d_eps"),
        "test_rmsnorm_module_has_unit_gain": ("rmsnorm",),
        "test_rmsnorm_loads_torch_nn_rmsnorm_state_dict_and_matches_it": ("rmsnorm",),
    },
    "layernorm": {
        "test_layernorm_module_without_bias_matches_torch_nn_layernorm": ("layernorm_without_bias",),
        "test_layernorm_returns_the_shape_and_dtype_of_its_input": ("layernorm_2d_f64_eps", "layernorm_bf16"),
        "test_layernorm_of_a_row_is_its_deviations_over_their_standard_deviation": (
            "layernorm",
            "layernorm_2d_f64_eps",
        ),
        "test_layernorm_normalises_each_row_over_its_own_last_dimension": ("layernorm", "layernorm_4d_small_eps"),
        "test_layernorm_multiplies_by_the_gain_and_adds_the_bias": ("layernorm", "layernorm_2d_f64_eps"),
        "test_layernorm_adds_eps_inside_the_square_root": ("layernorm_2d_f64_eps", "layernorm_4d_small_eps"),
        "test_layernorm_of_a_row_far_from_zero_depends_only_on_its_deviations": ("layernorm_large_mean",),
        "test_layernorm_computes_bfloat16_inputs_in_float32": ("layernorm_bf16_offset",),
        "test_layernorm_init_gain_is_one": ("layernorm_init",),
        "test_layernorm_init_bias_is_zero": ("layernorm_init",),
        "test_layernorm_matches_fixture": (
            "layernorm",
            "layernorm_bf16",
            "layernorm_bf16_offset",
            "layernorm_2d_f64_eps",
        ),
        "test_layernorm_kernel_matches_torch_builtin": ("layernorm_2d_f64_eps", "layernorm_4d_small_eps"),
        "test_layernorm_module_parameters": ("layernorm", "layernorm_constant_row"),
        "test_layernorm_loads_torch_nn_layernorm_state_dict_and_matches_it": ("layernorm",),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {}
