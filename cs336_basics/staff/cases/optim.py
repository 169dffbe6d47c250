"""AdamW and the learning-rate schedule: the builders of their inputs, then their cases and what they
grade of the public tests, then their mistakes, accepted variants and confusers."""

import math
from functools import partial

import numpy as np
import torch
from torch import Tensor

from cs336_basics import optim
from cs336_basics.staff.cases.case import F64, Case
from cs336_basics.staff.cases.draw import Make, Rng, randn
from cs336_basics.staff.mistakes import confuser, mistake, variant


def away_from_zero(rng: Rng, *shape: int, scale: float) -> Tensor:
    """Values of size scale * [0.5, 3.5) or so, with random signs: |x| = scale * (0.5 + |N(0, 1)|)."""
    z = rng.standard_normal(shape)
    return torch.from_numpy((np.sign(z) * (0.5 + np.abs(z)) * scale).astype(np.float32))


def adamw_case(
    shapes: dict[str, tuple[int, ...]],
    steps: int,
    lr: float,
    weight_decay: float,
    eps: float = 1e-8,
    betas: tuple[float, float] = (0.9, 0.999),
    grad_scale: float = 1.0,
    param_std: float = 1.0,
    group_lrs: tuple[float, ...] | None = None,
    resume_after: int = 0,
) -> Make:
    """Parameters ~ N(0, param_std^2) and `steps` gradients per parameter of size grad_scale *
    [0.5, 3.5) (away from 0: a tiny |g| on the first step makes where eps sits matter, which the
    hyper-parameters of a case decide instead). group_lrs: one param group per parameter (sorted
    names) with that lr; resume_after: the optimizer's state_dict moves to a new one after that
    many steps (adapters.run_adamw_steps)."""

    def make(rng):
        params = {name: randn(rng, *shape, std=param_std) for name, shape in shapes.items()}
        grads = {name: away_from_zero(rng, steps, *shape, scale=grad_scale) for name, shape in shapes.items()}
        extra = {} if group_lrs is None else {"group_lrs": torch.tensor(group_lrs, dtype=torch.float64)}
        extra |= {"resume_after": resume_after} if resume_after else {}
        return (
            dict(params=params, grads=grads, lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay)
            | extra
        )

    return make


def lr_schedule_case(
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
    random_iters: int = 16,
) -> Make:
    """The schedule at its boundaries (0, 1, warmup_iters - 1, warmup_iters, warmup_iters + 1,
    the middle of the annealing, cosine_cycle_iters - 1, cosine_cycle_iters, cosine_cycle_iters + 1,
    far beyond) and at `random_iters` iterations drawn up to 1.5 cosine_cycle_iters."""
    w, c = warmup_iters, cosine_cycle_iters
    fixed = [0, 1, w - 1, w, w + 1, (w + c) // 2, c - 1, c, c + 1, 10 * c + 7]

    def make(rng):
        drawn = rng.integers(0, (3 * c) // 2 + 2, size=random_iters).tolist()
        iterations = torch.tensor([i for i in fixed if i >= 0] + drawn, dtype=torch.int64)
        return dict(
            iterations=iterations,
            max_learning_rate=max_learning_rate,
            min_learning_rate=min_learning_rate,
            warmup_iters=warmup_iters,
            cosine_cycle_iters=cosine_cycle_iters,
        )

    return make


adamw_steps = partial(Case, component="adamw", adapter="run_adamw_steps")
# the rate at an iteration: a float64 scalar, exact but for rounding
lr_schedule_at = partial(Case, component="lr_schedule", adapter="run_lr_schedule_at", floor=0.0, dtype=F64)


CASES = [
    # adamw: 10 steps of a weight and a bias; witnesses: gradients of ~1e-4 at a tiny lr, where eps
    # inside or outside the square root differs; strong weight decay
    adamw_steps(
        "adamw",
        seed=75,
        make=adamw_case({"weight": (8, 16), "bias": (16,)}, 10, lr=1e-3, weight_decay=0.01),
        floor=4.7e-7,
    ),
    adamw_steps(
        "adamw_small_gradients",
        seed=76,
        make=adamw_case({"weight": (6, 5)}, 10, lr=1e-5, weight_decay=0.01, grad_scale=1e-4, param_std=0.1),
        floor=4.4e-7,
    ),
    adamw_steps(
        "adamw_strong_decay",
        seed=77,
        make=adamw_case({"weight": (4, 9), "bias": (9,)}, 8, lr=5e-4, weight_decay=0.2, betas=(0.8, 0.99)),
        floor=2.5e-7,
    ),
    # eps = 0 and no weight decay: a hard-coded eps fails, and the accepted orders agree to float64
    # rounding (CS336's Algorithm 1 adds eps to sqrt(v) before the bias correction and decays after
    # the step; torch.optim.AdamW adds it after and decays before: they differ by ~1e-5 otherwise)
    adamw_steps(
        "adamw_f64_zero_eps",
        seed=129,
        make=adamw_case({"weight": (5, 7)}, 6, lr=1e-2, weight_decay=0.0, eps=0.0, grad_scale=1e-2),
        floor=1.3e-16,
        dtype=F64,
    ),
    # what the public suite asserts of param groups and of a state_dict resume
    adamw_steps(
        "adamw_two_groups",
        seed=151,
        make=adamw_case({"w": (3, 4), "b": (4,)}, 4, lr=2e-3, weight_decay=0.0, group_lrs=(1e-2, 5e-4)),
        floor=7.7e-8,
    ),
    adamw_steps(
        "adamw_resumed_from_state_dict",
        seed=152,
        make=adamw_case({"weight": (4, 3)}, 6, lr=5e-3, weight_decay=0.0, resume_after=2),
        floor=1.1e-7,
    ),
    # hidden: one odd-shaped parameter over 40 steps; three parameters, other betas. (No float64
    # case: its tolerance, 1e-15, is below what another CPU's vector sqrt moves the expected
    # output by; tests/staff/test_adamw_oracle.py compares with torch.optim.AdamW in float64.)
    adamw_steps(
        "adamw_odd_many_steps",
        hidden=True,
        seed=1171,
        make=adamw_case({"weight": (5, 7)}, 40, lr=1e-3, weight_decay=0.01),
        floor=8.9e-7,
    ),
    adamw_steps(
        "adamw_three_params",
        hidden=True,
        seed=1172,
        make=adamw_case(
            {"embed": (11, 4), "gain": (4,), "head": (3, 4)}, 6, lr=1e-3, weight_decay=0.05, betas=(0.85, 0.98)
        ),
        floor=2.0e-7,
    ),
    # what tests/test_adamw.py asserts beyond one group's steps: each param group's own lr, and a
    # state_dict that carries m, v and the step count into a new optimizer
    adamw_steps(
        "adamw_param_groups",
        hidden=True,
        seed=1173,
        make=adamw_case({"a": (4, 5), "b": (6,)}, 5, lr=1e-3, weight_decay=0.0, group_lrs=(3e-2, 1e-4)),
        floor=8.9e-8,
    ),
    adamw_steps(
        "adamw_state_dict_resume",
        hidden=True,
        seed=1174,
        make=adamw_case({"weight": (5, 4), "bias": (4,)}, 8, lr=1e-2, weight_decay=0.0, resume_after=3),
        floor=8.9e-8,
    ),
    # lr_schedule: CS336's schedule (1, 0.1, 7, 21); no warm-up
    lr_schedule_at("lr_schedule", seed=80, make=lr_schedule_case(1.0, 0.1, 7, 21)),
    lr_schedule_at("lr_schedule_no_warmup", seed=81, make=lr_schedule_case(3e-4, 3e-5, 0, 100)),
    # hidden: a long schedule (LLaMA-like); warm-up as long as the cycle; a floor of 0
    lr_schedule_at(
        "lr_schedule_long", hidden=True, seed=1181, make=lr_schedule_case(6e-4, 6e-5, 2000, 100000, random_iters=40)
    ),
    lr_schedule_at(
        "lr_schedule_warmup_is_whole_cycle",
        hidden=True,
        seed=1182,
        make=lr_schedule_case(1e-3, 1e-4, 10, 10, random_iters=5),
    ),
    lr_schedule_at("lr_schedule_zero_floor", hidden=True, seed=1183, make=lr_schedule_case(2.0, 0.0, 3, 50)),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "adamw": {
        "test_adamw_matches_fixture": ("adamw", "adamw_small_gradients", "adamw_strong_decay"),
        "test_adamw_decays_weights_by_lr_times_weight_decay_when_gradients_are_zero": ("adamw_strong_decay",),
        "test_adamw_keeps_step_and_moments_per_parameter": ("adamw_three_params",),
        "test_adamw_state_dict_round_trip_resumes_exactly": ("adamw_state_dict_resume",),
        "test_adamw_param_groups_use_their_own_hyperparameters": ("adamw_param_groups",),
        "test_adamw_first_step_moves_each_parameter_against_its_gradient": ("adamw", "adamw_f64_zero_eps"),
        "test_adamw_counts_steps_from_one": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_m_is_the_moving_average_of_the_gradients": ("adamw", "adamw_f64_zero_eps"),
        "test_adamw_v_is_the_moving_average_of_the_squared_gradients": ("adamw", "adamw_f64_zero_eps"),
        "test_adamw_step_is_proportional_to_lr": ("adamw_f64_zero_eps", "adamw_two_groups"),
        "test_adamw_divides_m_hat_by_the_square_root_of_v_hat": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_bias_corrects_m_on_the_first_step": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_bias_corrects_v_on_the_first_step": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_adds_eps_to_the_root_of_v_not_under_it": ("adamw_small_gradients",),
        "test_adamw_decays_the_parameter_not_the_gradient": ("adamw_strong_decay",),
        "test_adamw_each_param_group_uses_its_own_learning_rate": ("adamw_param_groups",),
        "test_adamw_state_dict_round_trip_continues_exactly": ("adamw_state_dict_resume",),
    },
    "lr_schedule": {
        "test_lr_schedule_matches_fixture": ("lr_schedule", "lr_schedule_no_warmup"),
        "test_lr_schedule_starts_at_zero": ("lr_schedule",),
        "test_lr_schedule_warms_up_in_equal_steps_to_max": ("lr_schedule", "lr_schedule_long"),
        "test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_annealing": ("lr_schedule",),
        "test_lr_schedule_follows_the_cosine_a_quarter_into_annealing": ("lr_schedule", "lr_schedule_long"),
        "test_lr_schedule_is_min_from_the_end_of_the_cycle_on": ("lr_schedule",),
        "test_lr_schedule_rises_during_warm_up_and_falls_after": ("lr_schedule",),
        "test_lr_schedule_without_warm_up_starts_at_max": ("lr_schedule_no_warmup",),
        "test_lr_schedule_with_warm_up_as_long_as_the_cycle_drops_to_min_at_its_end": (
            "lr_schedule_warmup_is_whole_cycle",
        ),
        "test_lr_schedule_is_zero_at_iteration_zero": ("lr_schedule",),
        "test_lr_schedule_warms_up_at_an_even_rate": ("lr_schedule",),
        "test_lr_schedule_starts_its_cosine_at_the_max": ("lr_schedule",),
        "test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_the_cycle": ("lr_schedule",),
        "test_lr_schedule_stays_at_min_after_the_cycle": ("lr_schedule", "lr_schedule_zero_floor"),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_adamw_leaves_a_parameter_without_gradient_untouched": "the given loop skips p.grad None",
    "test_adamw_step_returns_the_closure_s_loss": "the given step() calls the closure",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- adamw (AdamW.step) --------------------------------------------------------------------------
# Each entry replaces AdamW.step with the loop below around its own per-parameter update.


def _adamw_step(update):
    """An AdamW.step that runs update(p, g, state, lr, beta1, beta2, eps, weight_decay) per parameter."""

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state.update(step=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                state["step"] += 1
                update(p, p.grad, state, group["lr"], *group["betas"], group["eps"], group["weight_decay"])

    step.update = update
    return step


def _adamw(name: str, **kwargs):
    """Register the decorated per-parameter update as the AdamW mistake (or, without a diagnosis, variant) `name`."""
    register = mistake(name, optim.AdamW, "step", **kwargs) if kwargs else variant(name, optim.AdamW, "step")
    return lambda update: register(_adamw_step(update)).update


def _moments(g, state, beta1, beta2):
    """m and v updated in place; returns their bias-corrected m_hat, v_hat."""
    state["m"].mul_(beta1).add_(g, alpha=1 - beta1)
    state["v"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
    t = state["step"]
    return state["m"] / (1 - beta1**t), state["v"] / (1 - beta2**t)


@_adamw(
    "adamw-l2_in_gradient",
    diagnosis="Adam with L2 regularisation (weight_decay * theta added to the gradient) "
    "instead of decoupled weight decay",
)
def adamw_l2_in_gradient(p, g, state, lr, beta1, beta2, eps, weight_decay):
    m_hat, v_hat = _moments(g + weight_decay * p, state, beta1, beta2)
    p.sub_(lr * m_hat / (v_hat.sqrt() + eps))


@_adamw("adamw-no_bias_correction", diagnosis="AdamW without bias correction (m and v not divided by 1 - beta^t)")
def adamw_no_bias_correction(p, g, state, lr, beta1, beta2, eps, weight_decay):
    p.mul_(1 - lr * weight_decay)
    _moments(g, state, beta1, beta2)
    p.sub_(lr * state["m"] / (state["v"].sqrt() + eps))


@_adamw(
    "adamw-eps_inside_sqrt",
    diagnosis="AdamW with eps inside the square root: sqrt(v_hat + eps) instead of sqrt(v_hat) + eps",
)
def adamw_eps_inside_sqrt(p, g, state, lr, beta1, beta2, eps, weight_decay):
    p.mul_(1 - lr * weight_decay)
    m_hat, v_hat = _moments(g, state, beta1, beta2)
    p.sub_(lr * m_hat / (v_hat + eps).sqrt())


@_adamw(
    "adamw-moments_after_update",
    diagnosis="AdamW updating theta with the previous step's m and v (moments updated after the step)",
)
def adamw_moments_after_update(p, g, state, lr, beta1, beta2, eps, weight_decay):
    t = state["step"]
    p.mul_(1 - lr * weight_decay)
    p.sub_(lr * (state["m"] / (1 - beta1**t)) / ((state["v"] / (1 - beta2**t)).sqrt() + eps))  # last step's m, v
    _moments(g, state, beta1, beta2)


@_adamw(
    "adamw-decay_scaled_by_adapted_rate",
    diagnosis="AdamW decaying by alpha_t * weight_decay * theta (the bias-corrected rate) instead of "
    "lr * weight_decay * theta",
)
def adamw_decay_scaled_by_adapted_rate(p, g, state, lr, beta1, beta2, eps, weight_decay):
    alpha_t = lr * math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
    m_hat, v_hat = _moments(g, state, beta1, beta2)
    p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
    p.sub_(alpha_t * weight_decay * p)


@_adamw("adamw-cs336_algorithm_1")
def adamw_cs336_algorithm_1(p, g, state, lr, beta1, beta2, eps, weight_decay):
    # CS336's Algorithm 1 (Kingma & Ba's efficient form): the bias corrections folded into
    # alpha_t, eps added to sqrt(v), the decay after the update
    alpha_t = lr * math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
    _moments(g, state, beta1, beta2)
    p.sub_(alpha_t * state["m"] / (state["v"].sqrt() + eps))
    p.sub_(lr * weight_decay * p)


def _adamw_update(p, state, lr, beta1, beta2, eps, weight_decay):
    state["step"] += 1
    t, m, v, g = state["step"], state["m"], state["v"], p.grad
    p.mul_(1.0 - lr * weight_decay)
    m.mul_(beta1).add_(g, alpha=1.0 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
    p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


def _new_state(p):
    return {"step": 0, "m": torch.zeros_like(p), "v": torch.zeros_like(p)}


@confuser("adamw-one_lr_for_every_group", optim.AdamW, "step")
@torch.no_grad()
def adamw_one_lr_for_every_group(self, closure=None):
    for group in self.param_groups:
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            if p.grad is not None:
                state = self.state[p] if self.state[p] else self.state[p].update(_new_state(p)) or self.state[p]
                _adamw_update(p, state, self.defaults["lr"], beta1, beta2, group["eps"], group["weight_decay"])


@confuser("adamw-moments_outside_state", optim.AdamW, "step")
@torch.no_grad()
def adamw_moments_outside_state(self, closure=None):
    moments = self.__dict__.setdefault("moments", {})  # state_dict() does not see it
    for group in self.param_groups:
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            if p.grad is not None:
                state = moments.setdefault(id(p), _new_state(p))
                _adamw_update(p, state, group["lr"], beta1, beta2, group["eps"], group["weight_decay"])


# ---- lr_schedule (optim.get_lr_cosine_schedule) --------------------------------------------------


def _warmup(it, max_lr, warmup):
    return max_lr * it / warmup


def _cosine(it, max_lr, min_lr, warmup, cycle):
    return min_lr + 0.5 * (1 + math.cos(math.pi * (it - warmup) / (cycle - warmup))) * (max_lr - min_lr)


@mistake(
    "lr_schedule-warmup_off_by_one",
    optim,
    "get_lr_cosine_schedule",
    diagnosis="the schedule warming up as (it + 1) / warmup_iters (it must be 0 at it = 0)",
)
def lr_warmup_off_by_one(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return _warmup(it + 1, max_lr, warmup)
    return min_lr if it > cycle else _cosine(it, max_lr, min_lr, warmup, cycle)


@mistake(
    "lr_schedule-cosine_over_whole_cycle",
    optim,
    "get_lr_cosine_schedule",
    diagnosis="the schedule's cosine over it / cosine_cycle_iters instead of (it - warmup_iters) / "
    "(cosine_cycle_iters - warmup_iters)",
)
def lr_cosine_over_whole_cycle(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return _warmup(it, max_lr, warmup)
    return min_lr if it > cycle else _cosine(it, max_lr, min_lr, 0, cycle)


@mistake(
    "lr_schedule-no_floor_after_cycle",
    optim,
    "get_lr_cosine_schedule",
    diagnosis="the schedule's cosine continuing after cosine_cycle_iters (it must stay at min_learning_rate)",
)
def lr_no_floor_after_cycle(it, max_lr, min_lr, warmup, cycle):
    return _warmup(it, max_lr, warmup) if it < warmup else _cosine(it, max_lr, min_lr, warmup, cycle)


@mistake(
    "lr_schedule-warmup_from_min",
    optim,
    "get_lr_cosine_schedule",
    diagnosis="the schedule warming up from min_learning_rate instead of from 0",
)
def lr_warmup_from_min(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return min_lr + _warmup(it, max_lr - min_lr, warmup)
    return min_lr if it > cycle else _cosine(it, max_lr, min_lr, warmup, cycle)


@mistake(
    "lr_schedule-anneals_to_zero",
    optim,
    "get_lr_cosine_schedule",
    diagnosis="the schedule's cosine annealing to 0 instead of to min_learning_rate",
)
def lr_anneals_to_zero(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return _warmup(it, max_lr, warmup)
    return min_lr if it > cycle else _cosine(it, max_lr, 0.0, warmup, cycle)


@variant("lr_schedule-cosine_squared", optim, "get_lr_cosine_schedule")
def lr_cosine_squared(it, max_lr, min_lr, warmup, cycle):
    # (1 + cos(pi p)) / 2 = cos^2(pi p / 2)
    if it < warmup:
        return it / warmup * max_lr
    if it >= cycle:
        return min_lr
    return min_lr + (max_lr - min_lr) * math.cos(math.pi / 2 * (it - warmup) / (cycle - warmup)) ** 2
