"""SiLU, GELU (exact and tanh) and softmax: the builders of their inputs, then their cases and what
they grade of the public tests, then their mistakes, accepted variants and alternative solutions."""

import math
from functools import partial

import torch

from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.case import BF16, BIG, F16, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, rand, randn
from cs336_basics.staff.mistakes import alternative, mistake, up, variant


def pointwise_case(
    batch: tuple[int, ...], std: float, extremes: tuple[float, ...] = (), mean: float = 0.0, **scalars
) -> Make:
    def make(rng):
        x = randn(rng, *batch, std=std, mean=mean)
        if extremes:  # witness values written into the first entries
            x.view(-1)[: len(extremes)] = torch.tensor(extremes)
        return dict(in_features=x, **scalars)

    return make


def softmax_case(batch: tuple[int, ...], dim: int, std: float, mean: float = 0.0, mask_fraction: float = 0.0) -> Make:
    def make(rng):
        x = randn(rng, *batch, std=std, mean=mean)
        if mask_fraction:  # -inf entries, never a whole slice along dim
            mask = rand(rng, *batch) < mask_fraction
            mask.select(dim, 0).fill_(False)
            x = x.masked_fill(mask, float("-inf"))
        return dict(in_features=x, dim=dim)

    return make


def with_grad_like_input(make: Make) -> Make:
    """A backward case of a kernel whose output is shaped as its input: `make`'s inputs and a
    gradient of the output, ~ N(0, 1)."""
    return lambda rng: (kw := make(rng)) | {"grad_output": randn(rng, *kw["in_features"].shape)}


PAIRS = (0.0, -0.0, 40.0, -40.0, 88.0, -88.0, BIG, -BIG)  # exact zeros and large magnitudes
MODERATE_PAIRS = PAIRS[:6]


def _fully_masked_row(kw: dict) -> None:
    kw["in_features"][2] = float("-inf")


def _fully_masked_middle_slice(kw: dict) -> None:
    kw["in_features"][0, :, 1, 2] = float("-inf")  # every entry along dim 1 at (0, ., 1, 2)


def _fully_masked_column(kw: dict) -> None:
    kw["in_features"][:, 1, 2] = float("-inf")  # every entry along dim 0 at (1, 2)


def _large_gradient_on_fully_masked_slices(kw: dict) -> None:
    # witness: g / tiny, the gradient of a sum of exps clamped at float32's smallest positive normal
    # (1.2e-38) instead of replaced, overflows to inf for |g| > 4, and inf x exp(-inf) is NaN
    dead = torch.isneginf(kw["in_features"]).all(kw["dim"], keepdim=True).expand_as(kw["in_features"])
    kw["grad_output"][dead] = 8.0


def _uniform_and_one_hot_rows(kw: dict) -> None:
    kw["in_features"][0] = 7.0  # equal logits: uniform 1/n
    kw["in_features"][1, 4] = 1e4  # one huge logit: one-hot, no overflow


silu = partial(Case, component="silu", adapter="run_silu")
gelu = partial(Case, component="gelu", adapter="run_gelu")
softmax = partial(Case, component="softmax", adapter="run_softmax")
silu_backward = partial(Case, component="silu", adapter="run_silu_backward")
gelu_backward = partial(Case, component="gelu", adapter="run_gelu_backward")
softmax_backward = partial(Case, component="softmax", adapter="run_softmax_backward")
F32_MOST = 3e38  # float32's most negative and largest values, near enough
# not float32's largest: x * sigmoid(x)'s autograd multiplies the upstream gradient by x there,
# which overflows for |grad| > 1 (the public test there takes a gradient of ones)
GRAD_EXTREMES = (-BIG, -100.0, -20.0, -0.0, 0.0, 20.0, 100.0, BIG)

CASES = [
    silu("silu", seed=4, make=pointwise_case(B + (64,), std=3.0), floor=9.1e-8),
    silu("silu_bf16", seed=5, make=pointwise_case(B + (64,), std=3.0), floor=2.4e-3, dtype=BF16),
    # witness: exp(-x) overflows for x << 0 and exp(x) for x >> 0; the output must stay finite. Half the
    # entries are random, so that fresh draws at grading time differ from the stored ones
    silu(
        "silu_extremes",
        seed=24,
        make=pointwise_case((16,), std=3.0, extremes=(-BIG, -100.0, -20.0, -0.0, 1e-30, 20.0, 100.0, BIG)),
        floor=2.0e-10,
    ),
    silu(
        "silu_extremes_fp16",
        seed=25,
        make=pointwise_case((16,), std=3.0, extremes=(-BIG, -100.0, -20.0, -0.0, 1e-4, 20.0, 100.0, BIG)),
        floor=8.9e-7,
        dtype=F16,
    ),
    # witness: float16 inputs around -13, where sigmoid(x) ~ 2e-6 is below float16's smallest normal
    # (6.1e-5) and keeps 5 bits: x * sigmoid(x) computed in float16 rounds there first (a few % off),
    # in float32 and cast once it is off by half an ulp of the product (the handout's dtype policy)
    silu("silu_fp16_left_tail", seed=160, make=pointwise_case(B + (64,), std=0.5, mean=-13.0), floor=6.8e-4, dtype=F16),
    silu("silu_4d_f64", seed=150, make=pointwise_case((2, 3, 4, 5), std=3.0), floor=1.5e-16, dtype=F64),
    # the gradient (autograd's of the kernel), finite and exact at extreme inputs: the quotient
    # x / (1 + exp(-x)) computes the output right and its gradient NaN (inf / inf) for x << 0
    silu_backward(
        "silu_backward_extremes",
        seed=216,
        make=with_grad_like_input(pointwise_case((4, 16), std=3.0, extremes=GRAD_EXTREMES)),
        floor=3.2e-7,
    ),
    silu_backward(
        "silu_backward_4d_f64",
        seed=221,
        make=with_grad_like_input(
            pointwise_case((2, 3, 4, 5), std=4.0, extremes=(-F32_MOST, -BIG, -700.0, BIG, F32_MOST))
        ),
        floor=1.6e-16,
        dtype=F64,
    ),
    # hidden: exactly 0 and large magnitudes (x or 0, never NaN); odd 1-D; bfloat16 4-D
    silu(
        "silu_zero_and_large",
        hidden=True,
        seed=1021,
        make=pointwise_case((3, 5, 7), std=4.0, extremes=PAIRS),
        floor=5.7e-10,
    ),
    silu_backward(
        "silu_backward_3d_odd",
        hidden=True,
        seed=1209,
        make=with_grad_like_input(pointwise_case((3, 5, 7), std=3.0, extremes=(-BIG, -88.0, 88.0, BIG))),
        floor=1.4e-7,
    ),
    silu("silu_1d_odd", hidden=True, seed=1022, make=pointwise_case((13,), std=2.0), floor=2.5e-8),
    silu(
        "silu_4d_bf16",
        hidden=True,
        seed=1023,
        make=pointwise_case((2, 3, 4, 5), std=3.0, extremes=(0.0, 300.0, -300.0)),
        floor=4.1e-4,
        dtype=BF16,
    ),
    gelu("gelu", seed=6, make=pointwise_case(B + (64,), std=3.0, approximate="none"), floor=4.7e-7),
    gelu("gelu_tanh", seed=7, make=pointwise_case(B + (64,), std=3.0, approximate="tanh"), floor=7.7e-8),
    gelu(
        "gelu_tanh_2d_bf16",
        seed=104,
        make=pointwise_case((6, 40), std=3.0, approximate="tanh"),
        floor=2.2e-3,
        dtype=BF16,
    ),
    # witness: bfloat16 inputs around -4.25, the left tail where GELU ~ x exp(-x^2/2): an error of
    # half an ulp in -x / sqrt(2) (or in u, tanh form) moves erfc (sigmoid) by ~x^2 times as much, so
    # the formula computed in bfloat16 is off by ~3 %, against half an ulp computed in float32
    gelu(
        "gelu_bf16_left_tail",
        seed=161,
        make=pointwise_case((6, 40), std=0.25, mean=-4.25, approximate="none"),
        floor=3.2e-3,
        dtype=BF16,
    ),
    gelu(
        "gelu_4d_f64",
        seed=105,
        make=pointwise_case((2, 3, 4, 5), std=3.0, approximate="none"),
        floor=1.5e-16,
        dtype=F64,
    ),
    # the gradient at extreme inputs (the tanh form's is NaN past ~1.8e19, torch's too: not there)
    gelu_backward(
        "gelu_backward_extremes",
        seed=217,
        make=with_grad_like_input(pointwise_case((4, 16), std=3.0, extremes=GRAD_EXTREMES, approximate="none")),
        floor=3.0e-7,
    ),
    gelu_backward(
        "gelu_backward_tanh",
        seed=220,
        make=with_grad_like_input(
            pointwise_case((2, 3, 11), std=3.0, extremes=(-BIG, -20.0, 0.0, BIG), approximate="tanh")
        ),
        floor=1.2e-6,
    ),
    # hidden: exactly 0 and large magnitudes (exact form); tanh form on odd 1-D; bfloat16
    # (values of 1e4 would set the error scale rms(e) so high that the two GELU forms, which
    # differ by up to 5e-4, could not be told apart: they get a case of their own)
    gelu(
        "gelu_zero_and_large",
        hidden=True,
        seed=1031,
        make=pointwise_case((2, 3, 4, 5), std=3.0, extremes=MODERATE_PAIRS, approximate="none"),
        floor=7.7e-8,
    ),
    gelu(
        "gelu_tanh_1d_odd",
        hidden=True,
        seed=1032,
        make=pointwise_case((17,), std=3.0, extremes=(0.0, 88.0, -88.0), approximate="tanh"),
        floor=9.8e-9,
    ),
    gelu(
        "gelu_huge_values",
        hidden=True,
        seed=1034,
        make=pointwise_case((6,), std=1.0, extremes=(BIG, -BIG, 1e3, -1e3, 0.0, -0.0), approximate="none"),
        floor=0.0,
    ),
    gelu_backward(
        "gelu_backward_4d_f64",
        hidden=True,
        seed=1210,
        make=with_grad_like_input(
            pointwise_case((2, 3, 4, 5), std=4.0, extremes=(-BIG, -40.0, BIG), approximate="none")
        ),
        floor=2.7e-16,
        dtype=F64,
    ),
    gelu(
        "gelu_bf16",
        hidden=True,
        seed=1033,
        make=pointwise_case((4, 9), std=3.0, approximate="none"),
        floor=1.7e-3,
        dtype=BF16,
    ),
    softmax("softmax", seed=8, make=softmax_case(B + (64,), dim=-1, std=2.0), floor=2.4e-7),
    softmax("softmax_dim0", seed=9, make=softmax_case((10, 3, 7), dim=0, std=2.0), floor=2.0e-7),
    softmax("softmax_large_logits", seed=10, make=softmax_case((6, 50), dim=-1, std=BIG, mean=BIG), floor=3.7e-27),
    softmax("softmax_masked", seed=11, make=softmax_case((8, 16), dim=-1, std=2.0, mask_fraction=0.5), floor=1.6e-7),
    softmax("softmax_2d_bf16", seed=106, make=softmax_case((6, 20), dim=-1, std=3.0), floor=2.7e-3, dtype=BF16),
    # witness: a float16 row over a vocabulary of 68000 (Llama 3's has 128256) of near-equal logits,
    # an untrained model's: the sum of exps, ~67700, is past float16's largest finite value (65504),
    # so computed in float16 it is inf and every probability 0; in float32 each is ~1.5e-5
    softmax(
        "softmax_fp16_vocab_row", seed=162, make=softmax_case((1, 68000), dim=-1, std=1e-3), floor=1.1e-3, dtype=F16
    ),
    softmax("softmax_4d_f64", seed=107, make=softmax_case((2, 3, 4, 5), dim=2, std=2.0), floor=1.6e-16, dtype=F64),
    # the gradient: zero at -inf entries and on a fully masked row (not NaN), along either dim
    softmax_backward(
        "softmax_backward_masked",
        seed=218,
        make=edited(
            with_grad_like_input(edited(softmax_case((6, 16), dim=-1, std=2.0, mask_fraction=0.3), _fully_masked_row)),
            _large_gradient_on_fully_masked_slices,
        ),
        floor=2.5e-6,
    ),
    softmax_backward(
        "softmax_backward_dim0_fully_masked",
        seed=222,
        make=edited(
            with_grad_like_input(edited(softmax_case((5, 4, 3), dim=0, std=2.0), _fully_masked_column)),
            _large_gradient_on_fully_masked_slices,
        ),
        floor=1.1e-6,
    ),
    # hidden: along a middle dim of a 4-D input; 1-D; a uniform row and a one-hot row; bfloat16
    softmax(
        "softmax_middle_dim", hidden=True, seed=1041, make=softmax_case((2, 5, 3, 4), dim=1, std=2.0), floor=8.4e-8
    ),
    softmax("softmax_1d", hidden=True, seed=1042, make=softmax_case((13,), dim=0, std=3.0), floor=6.0e-8),
    softmax(
        "softmax_uniform_and_one_hot",
        hidden=True,
        seed=1043,
        make=edited(softmax_case((4, 11), dim=-1, std=2.0), _uniform_and_one_hot_rows),
        floor=6.7e-8,
    ),
    softmax(
        "softmax_bf16", hidden=True, seed=1044, make=softmax_case((6, 11), dim=-1, std=4.0), floor=1.5e-3, dtype=BF16
    ),
    softmax_backward(
        "softmax_backward_middle_dim",
        hidden=True,
        seed=1211,
        make=edited(
            with_grad_like_input(
                edited(softmax_case((2, 5, 3, 4), dim=1, std=2.0, mask_fraction=0.3), _fully_masked_middle_slice)
            ),
            _large_gradient_on_fully_masked_slices,
        ),
        floor=8.6e-7,
    ),
    # a fully masked row returns zeros (our documented definition; torch.softmax gives NaN)
    softmax(
        "softmax_fully_masked_row",
        hidden=True,
        seed=1045,
        make=edited(softmax_case((4, 9), dim=-1, std=2.0, mask_fraction=0.3), _fully_masked_row),
        floor=7.2e-8,
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "silu": {
        "test_silu_returns_the_shape_and_dtype_of_its_input": ("silu_4d_f64", "silu_extremes_fp16"),
        "test_silu_is_x_times_sigmoid_x": ("silu", "silu_4d_f64"),
        "test_silu_of_large_inputs_is_finite": ("silu_extremes",),
        "test_silu_computes_float16_inputs_in_float32": ("silu_fp16_left_tail", "silu_extremes_fp16"),
        "test_silu_matches_fixture": ("silu", "silu_bf16", "silu_extremes", "silu_extremes_fp16", "silu_4d_f64"),
        "test_silu_kernel_matches_torch_builtin": ("silu_4d_f64", "silu_zero_and_large"),
        "test_silu_gradient_is_finite_for_large_inputs": ("silu_backward_extremes", "silu_backward_4d_f64"),
    },
    "gelu": {
        "test_gelu_returns_the_shape_and_dtype_of_its_input": ("gelu_4d_f64", "gelu_tanh_2d_bf16"),
        "test_gelu_exact_form_is_x_times_the_normal_cdf": ("gelu", "gelu_4d_f64"),
        "test_gelu_tanh_form_is_the_tanh_approximation": ("gelu_tanh", "gelu_tanh_2d_bf16"),
        "test_gelu_computes_bfloat16_inputs_in_float32": ("gelu_bf16_left_tail",),
        "test_gelu_matches_fixture": ("gelu", "gelu_tanh", "gelu_tanh_2d_bf16", "gelu_4d_f64"),
        "test_gelu_kernel_matches_torch_builtin": ("gelu_4d_f64", "gelu_tanh_1d_odd"),
        "test_gelu_far_left_tail_is_zero_on_the_scale_of_the_input": ("gelu_huge_values", "gelu_zero_and_large"),
    },
    "softmax": {
        "test_softmax_returns_the_shape_and_dtype_of_its_input": ("softmax_4d_f64", "softmax_fp16_vocab_row"),
        "test_softmax_of_a_row_is_its_exps_over_their_sum": ("softmax", "softmax_4d_f64"),
        "test_softmax_of_logits_plus_1000_is_the_same_and_finite": ("softmax_large_logits",),
        "test_softmax_normalises_along_dim": ("softmax_dim0", "softmax_4d_f64"),
        "test_softmax_gives_minus_inf_entries_probability_zero": ("softmax_masked",),
        "test_softmax_of_a_fully_masked_row_is_zeros": ("softmax_fully_masked_row",),
        "test_softmax_computes_float16_inputs_in_float32": ("softmax_fp16_vocab_row",),
        "test_softmax_matches_fixture": ("softmax", "softmax_dim0", "softmax_large_logits", "softmax_masked"),
        "test_softmax_kernel_matches_torch_builtin": ("softmax_4d_f64", "softmax_middle_dim"),
        "test_softmax_of_huge_logits_is_finite_and_sums_to_one": ("softmax_large_logits",),
        "test_softmax_row_with_one_unmasked_entry_puts_all_mass_there": (
            "softmax_masked",
            "softmax_uniform_and_one_hot",
        ),
        "test_softmax_fully_masked_row_returns_zeros": ("softmax_fully_masked_row",),
        "test_softmax_gradient_of_a_fully_masked_row_is_zero": (
            "softmax_backward_masked",
            "softmax_backward_dim0_fully_masked",
        ),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- silu ----------------------------------------------------------------------------------------


@mistake("silu-sigmoid_alone", F, "silu", diagnosis="SiLU returning sigmoid(x) without multiplying by x")
def silu_is_sigmoid(x):
    return torch.sigmoid(x)


@mistake("silu-gaussian_cdf_gate", F, "silu", diagnosis="SiLU replaced by GELU (x * Phi(x) instead of x * sigmoid(x))")
def silu_is_gelu(x):
    return F.gelu(x)


@mistake("silu-relu_instead", F, "silu", diagnosis="SiLU replaced by ReLU")
def silu_is_relu(x):
    return torch.relu(x)


@mistake(
    "silu-sigmoid_as_exp_ratio_overflows",
    F,
    "silu",
    diagnosis="SiLU with sigmoid written as exp(x) / (1 + exp(x)), which is inf / inf = NaN for large x",
)
def silu_as_exp_ratio(x):
    return x * torch.exp(x) / (1 + torch.exp(x))


IN_HALF = "an output computed in the input's 16-bit dtype (upcast to float32, compute, cast back once)"


@mistake(
    "silu-gradient_nan_for_large_negative_x",
    F,
    "silu",
    diagnosis="SiLU whose gradient is NaN for x << 0: exp(-x) overflows to inf inside a quotient (x / (1 + "
    "exp(-x)), or 1 / (1 + exp(-x)) as the sigmoid) and autograd divides inf by inf; the output is right, "
    "torch.sigmoid's gradient stays finite",
)
def silu_as_quotient(x):
    x_c = up(x)
    return (x_c / (1 + torch.exp(-x_c))).to(x.dtype)


@mistake(
    "silu-no_float32_upcast",
    F,
    "silu",
    diagnosis="SiLU computed in the input's 16-bit dtype (sigmoid(x) of float16 x < -10 is a subnormal of a "
    "few bits): upcast to float32, compute, cast back once",
    shows=IN_HALF,  # the exp-ratio mistake, also computed in float16, gives the same output there
)
def silu_no_upcast(x):
    return x * torch.sigmoid(x)  # the reference with its upcast deleted


@variant("silu-stable_sigmoid_by_sign", F, "silu")
def silu_stable_sigmoid_by_sign(x):
    # the sigmoid from exp(-|x|), which never overflows (nor does its gradient): 1 / (1 + e) for
    # x >= 0, e / (1 + e) below
    x_c = up(x)
    e = torch.exp(-x_c.abs())
    return (x_c * torch.where(x_c >= 0, 1 / (1 + e), e / (1 + e))).to(x.dtype)


alternative(
    "silu",
    "silu",
    """
    wide = x.double() if x.dtype == torch.float64 else x.float()
    gate = 1.0 / (1.0 + (-wide).exp())
    return (wide * gate).type_as(x)
    """,
)


# ---- gelu ----------------------------------------------------------------------------------------


@mistake(
    "gelu-tanh_for_exact",
    F,
    "gelu",
    diagnosis="GELU using the tanh approximation where the exact erf form was asked for",
)
def gelu_always_tanh(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x_c + 0.044715 * x_c**3)))).to(x.dtype)


@mistake(
    "gelu-exact_for_tanh",
    F,
    "gelu",
    diagnosis="GELU using the exact erf form where the tanh approximation was asked for",
)
def gelu_always_exact(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2)))).to(x.dtype)


@mistake("gelu-sigmoid_approximation", F, "gelu", diagnosis="GELU approximated as x * sigmoid(1.702 x)")
def gelu_sigmoid_approximation(x, approximate="none"):
    x_c = up(x)
    return (x_c * torch.sigmoid(1.702 * x_c)).to(x.dtype)


@mistake(
    "gelu-no_float32_upcast",
    F,
    "gelu",
    diagnosis="GELU computed in the input's 16-bit dtype (in the left tail erfc and sigmoid magnify the "
    "rounding of their argument): upcast to float32, compute, cast back once",
)
def gelu_no_upcast(x, approximate="none"):
    # the reference with its upcast deleted
    if approximate == "tanh":
        return x * torch.sigmoid(2.0 * math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3)))
    return 0.5 * x * torch.erfc(-x / math.sqrt(2.0))


@variant("gelu-one_plus_erf", F, "gelu")
def gelu_one_plus_erf(x, approximate="none"):
    # the paper's 0.5 x (1 + erf(x / sqrt 2)), as torch's F.gelu computes it: 1 + erf cancels to 0
    # for x << 0 (-0.0 at x = -10, where the exact value is -7.6e-23), a loss of 1e-22 on the scale
    # of any input that is not all in the far tail
    if approximate == "tanh":
        x_c = up(x)
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c.pow(3))
        return (0.5 * x_c * (1 + torch.tanh(u))).to(x.dtype)
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2.0)))).to(x.dtype)


# ---- softmax -------------------------------------------------------------------------------------


@mistake(
    "softmax-no_max_subtraction",
    F,
    "softmax",
    diagnosis="softmax without subtracting the max first (exp overflows for large logits)",
)
def softmax_without_max_subtraction(x, dim=-1):
    e = torch.exp(up(x))
    return (e / e.sum(dim, keepdim=True)).to(x.dtype)


@mistake(
    "softmax-gradient_nan_on_a_fully_masked_row",
    F,
    "softmax",
    diagnosis="softmax whose gradient is NaN on a fully masked row: the row's -inf entries go through exp or "
    "logsumexp and only the output is repaired afterwards (NaN replaced, or -inf swapped for 0); zero such "
    "rows before anything is computed from them",
    # softmax without the max subtraction is NaN there too (0 / 0): the case shows, it cannot name
    shows="NaN in the gradient of a fully masked row",
)
def softmax_repaired_after_logsumexp(x, dim=-1):
    x_c = up(x)
    lse = torch.logsumexp(x_c, dim, keepdim=True)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    return torch.exp(x_c - lse).to(x.dtype)


@mistake(
    "softmax-sum_clamped_at_tiny",
    F,
    "softmax",
    diagnosis="softmax that clamps a fully masked row's zero sum at the smallest positive float: the output "
    "is zeros, but the gradient g / tiny overflows to inf once |g| > 4, and inf x exp(-inf) is NaN; replace "
    "a zero sum by 1 instead (every other row's sum is at least 1)",
    shows="NaN in the gradient of a fully masked row",
)
def softmax_sum_clamped_at_tiny(x, dim=-1):
    x_c = up(x)
    exps = torch.exp(x_c - x_c.amax(dim=dim, keepdim=True).clamp(min=torch.finfo(x_c.dtype).min))
    return (exps / exps.sum(dim=dim, keepdim=True).clamp(min=torch.finfo(x_c.dtype).tiny)).to(x.dtype)


@mistake("softmax-ignores_dim", F, "softmax", diagnosis="softmax always over the last dimension, ignoring `dim`")
def softmax_always_last_dim(x, dim=-1):
    return torch.softmax(x, dim=-1)


@mistake(
    "softmax-divides_by_max", F, "softmax", diagnosis="softmax dividing by the largest exp instead of the sum of exps"
)
def softmax_divides_by_max(x, dim=-1):
    e = torch.exp(up(x) - up(x).amax(dim, keepdim=True))
    return (e / e.amax(dim, keepdim=True)).to(x.dtype)


@mistake(
    "softmax-no_float32_upcast",
    F,
    "softmax",
    diagnosis="softmax computed in the input's 16-bit dtype (the sum of exps of a float16 row longer than "
    "65504 overflows to inf): upcast to float32, compute, cast back once",
)
def softmax_no_upcast(x, dim=-1):
    # the reference with its upcast deleted
    row_max = x.amax(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).min)
    exps = torch.exp(x - row_max)
    total = exps.sum(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).tiny)
    return exps * total.reciprocal()


@variant("softmax-logsumexp", F, "softmax")
def softmax_logsumexp(x, dim=-1):
    # exp(x - logsumexp(x)); a fully masked row's logsumexp is taken over zeros instead, so no
    # -inf row reaches it (its output exp(-inf) = 0, its gradient 0)
    x_c = up(x)
    dead = torch.isneginf(x_c).all(dim, keepdim=True)
    lse = torch.logsumexp(x_c.masked_fill(dead, 0.0), dim, keepdim=True)
    return torch.exp(x_c - lse).to(x.dtype)


alternative(
    "softmax",
    "softmax",
    """
    work = x.double() if x.dtype == torch.float64 else x.float()
    peak = torch.max(work, dim=dim, keepdim=True).values
    peak = torch.nan_to_num(peak, neginf=0.0)
    e = (work - peak).exp()
    denominator = e.sum(dim, keepdim=True)
    denominator[denominator == 0] = 1.0
    return (e / denominator).type_as(x)
    """,
)
