"""Gradient clipping: the builder of its inputs, then its cases and what they grade of the public
tests, then its mistakes, accepted variant and confusers."""

from functools import partial

import torch

from cs336_basics import optim
from cs336_basics.staff.cases.case import BF16, F16, F64, Case
from cs336_basics.staff.cases.draw import Make, randn
from cs336_basics.staff.mistakes import confuser, mistake, up, variant


def gradient_clipping_case(
    shapes: dict[str, tuple[int, ...]],
    max_l2_norm: float,
    norm_ratio: float,
    params_without_grad: int = 0,
    one_pass: bool = False,
    with_norm: bool = False,
) -> Make:
    """Gradients whose global L2 norm is norm_ratio * max_l2_norm exactly (> 1: clipped; < 1: left
    alone), one parameter's gradient much larger than the others' (so that per-parameter norms
    and the global norm clip differently); with_norm: the norm it returns is graded too."""

    def make(rng):
        grads = {name: randn(rng, *shape) for name, shape in shapes.items()}
        first = sorted(grads)[0]
        grads[first] = grads[first] * 8.0  # one dominant gradient
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values()))
        scale = norm_ratio * max_l2_norm / float(norm)
        grads = {name: (g.double() * scale).float() for name, g in grads.items()}
        extra = {"with_norm": True} if with_norm else {}
        return (
            dict(grads=grads, max_l2_norm=max_l2_norm, params_without_grad=params_without_grad, one_pass=one_pass)
            | extra
        )

    return make


gradient_clipping_of = partial(Case, component="gradient_clipping", adapter="run_gradient_clipping_of")


CASES = [
    # gradient_clipping: CS336's max_l2_norm 1e-2 with the global norm 3x above it; below it (left
    # alone); parameters without a gradient and given as an iterator (model.parameters())
    gradient_clipping_of(
        "gradient_clipping",
        seed=84,
        make=gradient_clipping_case({"a": (5, 5), "b": (7,), "c": (3, 4)}, 1e-2, 3.0),
        floor=1.6e-7,
    ),
    gradient_clipping_of(
        "gradient_clipping_below_max",
        seed=85,
        make=gradient_clipping_case({"a": (4, 6), "b": (6,)}, 1.0, 0.5),
        floor=0.0,
    ),
    gradient_clipping_of(
        "gradient_clipping_one_pass_no_grad",
        seed=86,
        make=gradient_clipping_case(
            {"a": (3, 3), "b": (5,), "c": (2, 2)}, 0.5, 2.0, params_without_grad=2, one_pass=True
        ),
        floor=1.3e-7,
    ),
    gradient_clipping_of(
        "gradient_clipping_f64",
        seed=131,
        make=gradient_clipping_case({"a": (4, 3), "b": (5,)}, 2.0, 4.0),
        floor=2.6e-16,
        dtype=F64,
    ),
    gradient_clipping_of(
        "gradient_clipping_2d_bf16",
        seed=132,
        make=gradient_clipping_case({"a": (6,), "b": (2, 5)}, 0.1, 1.5),
        floor=4.7e-3,
        dtype=BF16,
    ),
    # the norm it returns, which the public suite asserts
    gradient_clipping_of(
        "gradient_clipping_returns_its_norm",
        seed=153,
        make=gradient_clipping_case({"a": (3, 4), "b": (6,)}, 0.5, 2.0, with_norm=True),
        floor=8.1e-8,
    ),
    # witness (public; gradient_clipping_f16_squares_overflow is its hidden twin): float16
    # gradients of up to ~2e3, whose squares (4e6) are past float16's 65504: a norm summed in
    # float16 is inf and the gradients are scaled to 0; summed in float32 the norm is ~2e3
    gradient_clipping_of(
        "gradient_clipping_f16_large_gradients",
        seed=167,
        make=gradient_clipping_case({"a": (4, 6), "b": (9,)}, 1.0, 2000.0),
        floor=5.8e-4,
        dtype=F16,
    ),
    # hidden: bfloat16; one 3-D gradient far above the max; exactly at the max (left alone)
    gradient_clipping_of(
        "gradient_clipping_bf16",
        hidden=True,
        seed=1191,
        make=gradient_clipping_case({"a": (4, 5), "b": (5,)}, 1.0, 4.0),
        floor=3.2e-4,
        dtype=BF16,
    ),
    gradient_clipping_of(
        "gradient_clipping_3d_far_above",
        hidden=True,
        seed=1192,
        make=gradient_clipping_case({"a": (2, 3, 4)}, 0.1, 1e3, params_without_grad=1),
        floor=5.1e-8,
    ),
    gradient_clipping_of(
        "gradient_clipping_many_small",
        hidden=True,
        seed=1193,
        make=gradient_clipping_case({f"p{i}": (3,) for i in range(9)}, 2.0, 0.9, one_pass=True),
        floor=0.0,
    ),
    # the norm gradient_clipping returns (tests/test_gradient_clipping.py asserts it); float16
    # gradients of ~1e3, whose squares overflow float16 unless the norm is summed in float32
    gradient_clipping_of(
        "gradient_clipping_returned_norm",
        hidden=True,
        seed=1194,
        make=gradient_clipping_case({"a": (5, 5), "b": (7,)}, 1.0, 3.0, with_norm=True),
        floor=1.1e-8,
    ),
    gradient_clipping_of(
        "gradient_clipping_f16_squares_overflow",
        hidden=True,
        seed=1195,
        make=gradient_clipping_case({"a": (5, 5), "b": (7,)}, 1.0, 2000.0, with_norm=True),
        floor=2.3e-5,
        dtype=F16,
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "gradient_clipping": {
        "test_gradient_clipping_matches_fixture": ("gradient_clipping", "gradient_clipping_below_max"),
        "test_gradient_clipping_matches_torch_builtin": ("gradient_clipping_f64", "gradient_clipping_3d_far_above"),
        "test_gradient_clipping_scales_the_global_norm_to_max_l2_norm": ("gradient_clipping_f64",),
        "test_gradient_clipping_keeps_directions": ("gradient_clipping", "gradient_clipping_f64"),
        "test_gradient_clipping_leaves_gradients_below_the_max_unchanged": ("gradient_clipping_below_max",),
        "test_gradient_clipping_skips_parameters_without_gradient": ("gradient_clipping_one_pass_no_grad",),
        "test_gradient_clipping_reads_an_iterator_of_parameters_once": ("gradient_clipping_one_pass_no_grad",),
        "test_gradient_clipping_returns_the_norm_before_clipping": ("gradient_clipping_returned_norm",),
        "test_gradient_clipping_returns_the_l2_norm_of_all_gradients_together": ("gradient_clipping_returned_norm",),
        "test_gradient_clipping_changes_the_gradients_when_their_norm_is_above_the_max": ("gradient_clipping",),
        "test_gradient_clipping_scales_every_gradient_by_one_factor": ("gradient_clipping",),
        "test_gradient_clipping_factor_is_max_over_the_norm_plus_eps": ("gradient_clipping_f64",),
        "test_gradient_clipping_of_float16_gradients_whose_squares_overflow_float16": (
            "gradient_clipping_f16_squares_overflow",
            "gradient_clipping_f16_large_gradients",
        ),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- gradient_clipping (optim.gradient_clipping) -------------------------------------------------


def _grads(parameters):
    return [p.grad for p in parameters if p.grad is not None]


def _norm(grads):
    return torch.stack([up(g).pow(2).sum() for g in grads]).sum().sqrt()


@mistake(
    "gradient_clipping-per_parameter_norms",
    optim,
    "gradient_clipping",
    diagnosis="gradient clipping by each parameter's own norm instead of the norm of all gradients together",
    shows="gradients not scaled by the one factor max_l2_norm / (norm + 1e-6), norm the L2 norm of all "
    "gradients together (check that norm, that each p.grad is scaled in place, and by the same factor)",
)
def clip_per_parameter(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    for g in grads:
        norm = _norm([g])
        if norm > max_l2_norm:
            g.mul_(max_l2_norm / (norm + eps))
    return _norm(grads)


@mistake(
    "gradient_clipping-clips_values",
    optim,
    "gradient_clipping",
    diagnosis="gradient clipping that clamps each entry to [-max_l2_norm, max_l2_norm] instead of scaling "
    "by the L2 norm",
)
def clip_values(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = _norm(grads)
    for g in grads:
        g.clamp_(-max_l2_norm, max_l2_norm)
    return norm


@mistake(
    "gradient_clipping-always_scales",
    optim,
    "gradient_clipping",
    diagnosis="gradient clipping that scales by max_l2_norm / (norm + eps) even when the norm is below max_l2_norm",
)
def clip_always_scales(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = _norm(grads)
    for g in grads:
        g.mul_(max_l2_norm / (norm + eps))
    return norm


@mistake(
    "gradient_clipping-without_eps",
    optim,
    "gradient_clipping",
    diagnosis="gradient clipping by max_l2_norm / norm instead of max_l2_norm / (norm + 1e-6)",
)
def clip_without_eps(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = _norm(grads)
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / norm)
    return norm


@mistake(
    "gradient_clipping-reads_parameters_twice",
    optim,
    "gradient_clipping",
    diagnosis="gradient clipping that iterates `parameters` twice: an iterator such as model.parameters() "
    "is empty the second time, so nothing is scaled (make a list first)",
    shows="gradients left as they were although their norm is above max_l2_norm (the parameters came as an "
    "iterator that can be read once)",
)
def clip_reads_parameters_twice(parameters, max_l2_norm, eps=1e-6):
    norm = _norm(_grads(parameters))  # an iterator is used up here
    if norm > max_l2_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_l2_norm / (norm + eps))
    return norm


@mistake(
    "gradient_clipping-no_float32_upcast",
    optim,
    "gradient_clipping",
    diagnosis="gradient clipping with the norm summed in the gradients' 16-bit dtype (float16 squares of "
    "gradients above 256 are inf, so every gradient is scaled to 0): accumulate the norm in float32",
    shows="gradients scaled to about 0, by a norm far too large (float16 squares summed in float16 overflow "
    "to inf: accumulate the norm in float32)",
)
def clip_norm_in_gradient_dtype(parameters, max_l2_norm, eps=1e-6):
    # the reference with its upcast deleted
    grads = _grads(parameters)
    norm = torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt()
    if norm > max_l2_norm:
        scale = max_l2_norm / (norm + eps)
        for g in grads:
            g.mul_(scale.to(g.dtype))
    return norm


@variant("gradient_clipping-clamped_coefficient", optim, "gradient_clipping")
def clip_coefficient_clamped(parameters, max_l2_norm, eps=1e-6):
    # as torch.nn.utils.clip_grad_norm_ writes it: always multiply by min(1, max / (norm + eps))
    grads = _grads(parameters)
    norm = _norm(grads)
    coef = (max_l2_norm / (norm + eps)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))
    return norm


@confuser("gradient_clipping-norm_without_square_root", optim, "gradient_clipping")
def clip_norm_without_square_root(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = sum(g.double().pow(2).sum() for g in grads)  # the sum of squares, no sqrt
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / (norm + eps))
    return norm


@confuser("gradient_clipping-mean_of_squares", optim, "gradient_clipping")
def clip_mean_of_squares(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = torch.cat([g.double().reshape(-1) for g in grads]).pow(2).mean()
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / (norm + eps))
    return norm


@confuser("gradient_clipping-rebinds_g", optim, "gradient_clipping")
def clip_rebinds_g(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = torch.stack([g.double().pow(2).sum() for g in grads]).sum().sqrt()
    if norm > max_l2_norm:
        for g in grads:
            g = g * (max_l2_norm / (norm + eps))  # noqa: PLW2901 -- rebinds the name, scales nothing
    return norm


@confuser("gradient_clipping-returns_nothing", optim, "gradient_clipping")
def clip_returns_nothing(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = torch.stack([g.float().pow(2).sum() for g in grads]).sum().sqrt()
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / (norm + eps))


@confuser("gradient_clipping-squares_in_the_gradient_dtype", optim, "gradient_clipping")
def clip_squares_in_the_gradient_dtype(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt()  # float16 squares overflow to inf
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / (norm + eps))
    return norm
