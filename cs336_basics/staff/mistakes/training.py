"""Cross-entropy, AdamW, the learning-rate schedule, gradient clipping, get_batch and the checkpoint:
their mistakes, accepted variants and confusers."""

import copy
import math

import numpy as np
import torch

from cs336_basics import data, optim, serialization
from cs336_basics.nn import functional as F

from . import confuser, mistake, up, variant

# ---- cross_entropy (functional.cross_entropy) ----------------------------------------------------

NOT_FINITE_LOSS = (
    "a loss that is not finite for logits of size 1e4 (exp of a large logit overflowing, or the log of a "
    "probability that rounded to 0)"
)


def _flat(inputs, targets):
    x = up(inputs)
    return x.reshape(-1, x.shape[-1]), targets.reshape(-1)


def _target_logit(x, targets):
    return x.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _logsumexp(x, dim=-1):
    m = x.amax(dim, keepdim=True)
    return (torch.log(torch.exp(x - m).sum(dim, keepdim=True)) + m).squeeze(dim)


@mistake(
    "cross_entropy-log_of_probability",
    F,
    "cross_entropy",
    diagnosis="cross-entropy as -log(softmax(x)[target]): a probability that rounds to 0 gives log(0) = -inf "
    "(use logsumexp(x) - x[target])",
    shows=NOT_FINITE_LOSS,
)
def cross_entropy_log_of_softmax(inputs, targets):
    x, t = _flat(inputs, targets)
    probs = F.softmax(x, dim=-1)  # stable, but a tiny probability rounds to 0 and its log is -inf
    return (-torch.log(_target_logit(probs, t))).mean().to(inputs.dtype)


@mistake(
    "cross_entropy-no_max_subtraction",
    F,
    "cross_entropy",
    diagnosis="cross-entropy as log(sum(exp(x))) - x[target] without subtracting the max (exp overflows)",
    shows=NOT_FINITE_LOSS,
)
def cross_entropy_no_max_subtraction(inputs, targets):
    x, t = _flat(inputs, targets)
    return (torch.log(torch.exp(x).sum(-1)) - _target_logit(x, t)).mean().to(inputs.dtype)


@mistake(
    "cross_entropy-sum_not_mean",
    F,
    "cross_entropy",
    diagnosis="cross-entropy summed over positions instead of averaged",
)
def cross_entropy_sum_not_mean(inputs, targets):
    x, t = _flat(inputs, targets)
    return (_logsumexp(x) - _target_logit(x, t)).sum().to(inputs.dtype)


@mistake(
    "cross_entropy-normalised_over_positions",
    F,
    "cross_entropy",
    diagnosis="cross-entropy with the softmax over the first (batch) dimension instead of the last (classes)",
)
def cross_entropy_normalised_over_positions(inputs, targets):
    x = up(inputs)
    log_probs = x - _logsumexp(x, 0).unsqueeze(0)
    return (-_target_logit(log_probs, targets)).mean().to(inputs.dtype)


@mistake(
    "cross_entropy-indexed_not_gathered",
    F,
    "cross_entropy",
    diagnosis="cross-entropy taking x[:, targets] (every row's logit of every target) instead of each "
    "row's own target logit (gather)",
)
def cross_entropy_indexed_not_gathered(inputs, targets):
    x, t = _flat(inputs, targets)
    return (_logsumexp(x)[:, None] - x[:, t]).mean().to(inputs.dtype)  # x[:, t] is (N, N)


@mistake(
    "cross_entropy-no_float32_upcast",
    F,
    "cross_entropy",
    diagnosis="cross-entropy computed in the input's 16-bit dtype (bfloat16 cannot hold 1 + exp(-3), so a "
    "confident model's loss is 6 % off): upcast the logits to float32, compute, cast the loss back once",
)
def cross_entropy_no_upcast(inputs, targets):
    # the reference with its upcast deleted
    shifted = inputs - inputs.amax(dim=-1, keepdim=True)
    log_normalizer = shifted.exp().sum(dim=-1).log()
    return (log_normalizer - shifted.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)).mean()


@variant("cross_entropy-logsumexp", F, "cross_entropy")
def cross_entropy_logsumexp(inputs, targets):
    x, t = _flat(inputs, targets)
    return (torch.logsumexp(x, -1) - _target_logit(x, t)).mean().to(inputs.dtype)


@variant("cross_entropy-max_plus_log_sum_exp", F, "cross_entropy")
def cross_entropy_max_plus_log_sum_exp(inputs, targets):
    # the textbook m + log(sum(exp(x - m))) - x[t]: adding m back rounds at ulp(m), so for logits
    # near 1000 the loss (a few units) keeps ~1e-14 of relative accuracy, not ~1e-16
    x, t = _flat(inputs, targets)
    m = x.detach().amax(-1, keepdim=True)
    lse = m.squeeze(-1) + torch.log(torch.exp(x - m).sum(-1))
    return (lse - _target_logit(x, t)).mean().to(inputs.dtype)


@variant("cross_entropy-shifted_minus_log_normalizer", F, "cross_entropy")
def cross_entropy_log_softmax(inputs, targets):
    # -mean(log_softmax(x)[t]) with log_softmax = x - m - log(sum(exp(x - m))), as torch computes it
    x, t = _flat(inputs, targets)
    shifted = x - x.detach().amax(-1, keepdim=True)
    log_probs = shifted - torch.log(torch.exp(shifted).sum(-1, keepdim=True))
    return (-_target_logit(log_probs, t)).mean().to(inputs.dtype)


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


# ---- get_batch (data.get_batch) ------------------------------------------------------------------
# get_batch's and checkpoint's graded cases are scenarios (adapters.run_get_batch_checks, run_checkpoint_resume)
# whose output records behaviour, so behaviours are named by the output's fingerprint like any wrong value:
# which checks of the batches fail, or the iteration and parameters a resumed training ends with.


def _windows(dataset, starts, context_length, device):
    positions = np.asarray(starts)[:, None] + np.arange(context_length + 1)
    return torch.from_numpy(np.asarray(dataset[positions], dtype=np.int64)).to(device)


@mistake(
    "get_batch-never_last_window",
    data,
    "get_batch",
    diagnosis="get_batch drawing starts from 0 .. len(dataset) - context_length - 2 (the last window is never "
    "drawn: randint's upper bound is exclusive)",
)
def get_batch_never_last_window(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length - 1, (batch_size,), generator=generator)  # one start short
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


@mistake(
    "get_batch-never_first_window",
    data,
    "get_batch",
    diagnosis="get_batch drawing starts from 1, never 0",
    shows="batches in which the first window (start 0) is never drawn",
)
def get_batch_never_first_window(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(1, len(dataset) - context_length, (batch_size,), generator=generator)  # counts from 1
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


@mistake(
    "get_batch-targets_not_shifted",
    data,
    "get_batch",
    diagnosis="get_batch returning the inputs as the targets (not moved on by one token)",
    shows="targets that are not the inputs' windows moved on by one token (y[:, i] != x[:, i + 1])",
)
def get_batch_targets_not_shifted(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, :-1].clone()  # y = x


@mistake(
    "get_batch-one_window_per_batch",
    data,
    "get_batch",
    diagnosis="get_batch drawing one start per batch and repeating its window in every row",
)
def get_batch_one_window_per_batch(dataset, batch_size, context_length, device, generator=None):
    start = torch.randint(0, len(dataset) - context_length, (1,), generator=generator)
    w = _windows(dataset, start.numpy().repeat(batch_size), context_length, device)  # the same window in every row
    return w[:, :-1], w[:, 1:]


@mistake(
    "get_batch-keeps_token_dtype",
    data,
    "get_batch",
    diagnosis="get_batch returning the token file's dtype (uint16 or int32) instead of torch.long",
    shows="batches failing the first check: inputs and targets each a torch.long tensor of shape "
    "(batch_size, context_length) on the device",
)
def get_batch_keeps_token_dtype(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = torch.from_numpy(np.asarray(dataset[starts.numpy()[:, None] + np.arange(context_length + 1)])).to(device)
    return w[:, :-1], w[:, 1:]  # uint16 or int32 like the token file, not torch.long


@mistake(
    "get_batch-reads_whole_file",
    data,
    "get_batch",
    diagnosis="get_batch copying the whole token file into memory (np.array(dataset)) to take a few windows",
)
def get_batch_reads_whole_file(dataset, batch_size, context_length, device, generator=None):
    tokens = np.array(dataset)  # a copy of the whole token file in memory
    starts = torch.randint(0, len(tokens) - context_length, (batch_size,), generator=generator)
    w = _windows(tokens, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


@variant("get_batch-numpy_slices", data, "get_batch")
def get_batch_numpy_slices(dataset, batch_size, context_length, device, generator=None):
    """Correct, written otherwise: one NumPy slice per row."""
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator).tolist()
    rows = np.stack([np.asarray(dataset[s : s + context_length + 1], dtype=np.int64) for s in starts])
    return torch.tensor(rows[:, :-1], device=device), torch.tensor(rows[:, 1:], device=device)


@confuser("get_batch-transposed", data, "get_batch")
def get_batch_transposed(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1].T.contiguous(), w[:, 1:].T.contiguous()


@confuser("get_batch-targets_are_inputs_plus_one", data, "get_batch")
def get_batch_targets_are_inputs_plus_one(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, :-1] + 1  # the next token id, not the next token


@confuser("get_batch-reseeds_generator", data, "get_batch")
def get_batch_reseeds_generator(dataset, batch_size, context_length, device, generator=None):
    generator = torch.Generator().manual_seed(0)  # the same draw on every call
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


# ---- checkpoint (serialization.save_checkpoint, load_checkpoint) ---------------------------------

OPTIMIZER_STATE_LOST = (
    "a resumed training whose steps after the load are those of an optimizer starting again from zero "
    "(AdamW's moments and step count did not come back: saved, or loaded?)"
)


@mistake(
    "checkpoint-optimizer_state_not_saved",
    serialization,
    "save_checkpoint",
    diagnosis="save_checkpoint keeping the optimizer's hyper-parameters but not its state (AdamW's moments and "
    "step count restart at zero)",
    shows=OPTIMIZER_STATE_LOST,
)
def save_checkpoint_without_optimizer_state(model, optimizer, iteration, out):
    optimizer_state = {"state": {}, "param_groups": optimizer.state_dict()["param_groups"]}  # hyper-parameters only
    serialization.write_checkpoint(
        {"model": model.state_dict(), "optimizer": optimizer_state, "iteration": iteration}, out
    )


@mistake(
    "checkpoint-optimizer_not_loaded",
    serialization,
    "load_checkpoint",
    diagnosis="load_checkpoint restoring the model but not the optimizer (AdamW's moments and step count "
    "restart at zero)",
    shows=OPTIMIZER_STATE_LOST,
)
def load_checkpoint_skips_optimizer(src, model, optimizer):
    state = serialization.read_checkpoint(src)
    model.load_state_dict(state["model"])
    return state["iteration"]  # the optimizer's moments and step count start again from zero


@mistake(
    "checkpoint-iteration_not_restored",
    serialization,
    "load_checkpoint",
    diagnosis="load_checkpoint returning 0 instead of the stored iteration",
)
def load_checkpoint_iteration_zero(src, model, optimizer):
    state = serialization.read_checkpoint(src)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return 0  # the iteration is not restored


@mistake(
    "checkpoint-model_loaded_into_a_copy",
    serialization,
    "load_checkpoint",
    diagnosis="load_checkpoint loading the weights into a new model object, not into the model it was given",
)
def load_checkpoint_into_a_copy(src, model, optimizer):
    state = serialization.read_checkpoint(src)
    model = copy.deepcopy(model)  # rebinding the name: the caller's model keeps its old parameters
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["iteration"]
