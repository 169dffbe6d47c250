"""RMSNorm and LayerNorm: the builders of their inputs, then their cases and what they grade of the
public tests, then their mistakes (LayerNorm's initialisation too), accepted variants and
alternative solutions."""

from functools import partial

import torch
from torch import nn

from cs336_basics.nn import LayerNorm
from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.case import BF16, EXACT_INT64, F16, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, init_case, randn
from cs336_basics.staff.mistakes import alternative, mistake, up, variant
from cs336_basics.testing import WRONG_DTYPE


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


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- rmsnorm -------------------------------------------------------------------------------------


def _rmsnorm(x, weight, eps):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-eps_outside_sqrt",
    F,
    "rmsnorm",
    diagnosis="RMSNorm with epsilon outside the square root: x / (sqrt(mean(x^2)) + eps)",
)
def rmsnorm_eps_outside_sqrt(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c / (x_c.pow(2).mean(-1, keepdim=True).sqrt() + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-no_float32_upcast",
    F,
    "rmsnorm",
    diagnosis="RMSNorm computed in the input's 16-bit dtype (x^2 overflows float16): upcast to float32 first",
)
def rmsnorm_no_upcast(x, weight, eps=1e-5, cast_before_gain=False):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


@mistake(
    "rmsnorm-subtracts_the_mean",
    F,
    "rmsnorm",
    diagnosis="RMSNorm that subtracts the mean (that is LayerNorm without a bias)",
)
def rmsnorm_is_layernorm(x, weight, eps=1e-5, cast_before_gain=False):
    return _rmsnorm(up(x) - up(x).mean(-1, keepdim=True), weight, eps).to(x.dtype)


@mistake("rmsnorm-missing_gain", F, "rmsnorm", diagnosis="RMSNorm without multiplying by the gain `weight`")
def rmsnorm_missing_gain(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


@mistake(
    "rmsnorm-sum_not_mean", F, "rmsnorm", diagnosis="RMSNorm with the sum of squares where the mean of squares belongs"
)
def rmsnorm_sum_not_mean(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).sum(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-over_whole_tensor",
    F,
    "rmsnorm",
    diagnosis="RMSNorm taking the mean over the whole tensor instead of the last dimension",
)
def rmsnorm_over_whole_tensor(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean() + eps) * up(weight)).to(x.dtype)


@mistake("rmsnorm-eps_ignored", F, "rmsnorm", diagnosis="RMSNorm ignoring the `eps` it was given (a fixed 1e-5)")
def rmsnorm_eps_ignored(x, weight, eps=1e-5, cast_before_gain=False):
    return _rmsnorm(x, weight, 1e-5)  # the eps argument never reaches the kernel


@mistake(
    "rmsnorm-fixed_reduction_axis",
    F,
    "rmsnorm",
    diagnosis="RMSNorm taking the mean over dimension 2 (the last one only for 3-D input) instead of dimension -1",
    raises=(IndexError,),
)
def rmsnorm_fixed_reduction_axis(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(2, keepdim=True) + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-returns_float32",
    F,
    "rmsnorm",
    diagnosis=WRONG_DTYPE,
    raises=(TypeError,),  # a float32 output meets bfloat16 weights in the next layer
)
def rmsnorm_returns_float32(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = x.float() if x.dtype != torch.float64 else x
    return x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)


@variant("rmsnorm-meta_cast_order", F, "rmsnorm")
def rmsnorm_meta_cast_order(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    normed = (x_c / torch.sqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return normed * weight.to(x.dtype)  # Meta / Hugging Face: cast, then multiply by the gain


alternative(
    "rmsnorm",
    "rmsnorm",
    """
    work = x.double() if x.dtype == torch.float64 else x.float()
    d = work.shape[-1]
    square_sum = (work * work).sum(dim=-1, keepdim=True)
    root_mean = torch.sqrt(square_sum / d + eps)
    g = weight.double() if x.dtype == torch.float64 else weight.float()
    return (g * (work / root_mean)).type_as(x)
    """,
)


# ---- layernorm -----------------------------------------------------------------------------------


@mistake("layernorm-eps_ignored", F, "layernorm", diagnosis="LayerNorm ignoring the `eps` it was given (a fixed 1e-5)")
def layernorm_eps_ignored(x, weight, bias, eps=1e-5):
    x_c = up(x)
    out = torch.nn.functional.layer_norm(x_c, x.shape[-1:], up(weight), None if bias is None else up(bias), 1e-5)
    return out.to(x.dtype)


@mistake(
    "layernorm-unbiased_variance",
    F,
    "layernorm",
    diagnosis="LayerNorm with the unbiased variance (divide by d_model - 1 instead of d_model)",
)
def layernorm_unbiased_variance(x, weight, bias, eps=1e-5):
    x_c = up(x)
    out = (x_c - x_c.mean(-1, keepdim=True)) * torch.rsqrt(x_c.var(-1, keepdim=True, unbiased=True) + eps)
    return (out * up(weight) + (0 if bias is None else up(bias))).to(x.dtype)


@mistake(
    "layernorm-no_centering", F, "layernorm", diagnosis="LayerNorm without subtracting the mean (RMSNorm plus a bias)"
)
def layernorm_no_centering(x, weight, bias, eps=1e-5):
    return (up(_rmsnorm(x, weight, eps)) + (0 if bias is None else up(bias))).to(x.dtype)


@mistake("layernorm-missing_bias", F, "layernorm", diagnosis="LayerNorm without adding the bias")
def layernorm_missing_bias(x, weight, bias, eps=1e-5):
    return torch.nn.functional.layer_norm(up(x), x.shape[-1:], up(weight), None, eps).to(x.dtype)


@mistake(
    "layernorm-no_float32_upcast",
    F,
    "layernorm",
    diagnosis="LayerNorm computed in bfloat16 (the mean of large values loses the centred part): upcast to "
    "float32 first",
)
def layernorm_no_upcast(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + (0 if bias is None else bias)


@mistake(
    "layernorm-variance_as_mean_square_minus_square_mean",
    F,
    "layernorm",
    diagnosis="LayerNorm with the variance as mean(x^2) - mean(x)^2, which cancels in float32 when the mean "
    "is large against the spread: use mean((x - mean)^2)",
)
def layernorm_variance_by_cancellation(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean = x_c.mean(-1, keepdim=True)
    var = x_c.pow(2).mean(-1, keepdim=True) - mean.pow(2)  # two numbers of ~mean^2, subtracted
    out = (x_c - mean) * torch.rsqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


# its constructor's initialisation (Linear's, in linear.py, says what the init-check cases test)


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


@variant("layernorm-torch_var", F, "layernorm")
def layernorm_torch_var(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean, var = x_c.mean(-1, keepdim=True), x_c.var(-1, keepdim=True, unbiased=False)
    out = (x_c - mean) / torch.sqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


alternative(
    "layernorm",
    "layernorm",
    """
    work = x.double() if x.dtype == torch.float64 else x.float()
    n = work.shape[-1]
    mu = work.sum(-1, keepdim=True) / n
    centred = work - mu
    sigma2 = (centred * centred).sum(-1, keepdim=True) / n
    y = centred / (sigma2 + eps).sqrt()
    y = y * weight.type_as(y)
    if bias is None:
        return y.type_as(x)
    return (y + bias.type_as(y)).type_as(x)
    """,
)
