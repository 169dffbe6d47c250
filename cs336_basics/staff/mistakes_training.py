"""The mistake catalogue of the training components (cross_entropy, adamw, lr_schedule,
gradient_clipping): plausible wrong implementations with their diagnoses, and correct ones
written differently. Appended to cs336_basics/staff/mistakes.py's MISTAKES and VARIANTS."""

import math

import torch

from cs336_basics import optim
from cs336_basics.nn import functional as F
from cs336_basics.staff.mistakes import Mistake, Variant, up

# ---- cross_entropy (functional.cross_entropy) -------------------------------------------


def _flat(inputs, targets):
    x = up(inputs)
    return x.reshape(-1, x.shape[-1]), targets.reshape(-1)


def _target_logit(x, targets):
    return x.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def cross_entropy_log_of_softmax(inputs, targets):
    x, t = _flat(inputs, targets)
    probs = F.softmax(x, dim=-1)  # stable, but a tiny probability rounds to 0 and its log is -inf
    return (-torch.log(_target_logit(probs, t))).mean().to(inputs.dtype)


def cross_entropy_no_max_subtraction(inputs, targets):
    x, t = _flat(inputs, targets)
    return (torch.log(torch.exp(x).sum(-1)) - _target_logit(x, t)).mean().to(inputs.dtype)


def _stable_losses(x, t):
    m = x.amax(-1, keepdim=True)
    return torch.log(torch.exp(x - m).sum(-1)) + m.squeeze(-1) - _target_logit(x, t)


def cross_entropy_sum_not_mean(inputs, targets):
    x, t = _flat(inputs, targets)
    return _stable_losses(x, t).sum().to(inputs.dtype)


def cross_entropy_normalised_over_positions(inputs, targets):
    x = up(inputs)  # softmax over dim 0 (the batch) instead of the last (the classes)
    m = x.amax(0, keepdim=True)
    log_probs = x - (torch.log(torch.exp(x - m).sum(0, keepdim=True)) + m)
    return (-_target_logit(log_probs, targets)).mean().to(inputs.dtype)


def cross_entropy_indexed_not_gathered(inputs, targets):
    x, t = _flat(inputs, targets)
    m = x.amax(-1, keepdim=True)
    lse = torch.log(torch.exp(x - m).sum(-1)) + m.squeeze(-1)  # (N,)
    return (lse[:, None] - x[:, t]).mean().to(inputs.dtype)  # x[:, t] is (N, N): every row's logit of every target


def cross_entropy_logsumexp(inputs, targets):
    # correct: torch.logsumexp minus the target logit, in float32
    x, t = _flat(inputs, targets)
    return (torch.logsumexp(x, -1) - _target_logit(x, t)).mean().to(inputs.dtype)


# ---- adamw (AdamW.step) -----------------------------------------------------------------


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

    return step


def _moments(g, state, beta1, beta2):
    state["m"].mul_(beta1).add_(g, alpha=1 - beta1)
    state["v"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
    t = state["step"]
    return state["m"] / (1 - beta1**t), state["v"] / (1 - beta2**t)


def _adam_l2(p, g, state, lr, beta1, beta2, eps, weight_decay):
    m_hat, v_hat = _moments(g + weight_decay * p, state, beta1, beta2)  # decay through the gradient
    p.sub_(lr * m_hat / (v_hat.sqrt() + eps))


def _no_bias_correction(p, g, state, lr, beta1, beta2, eps, weight_decay):
    p.mul_(1 - lr * weight_decay)
    _moments(g, state, beta1, beta2)
    p.sub_(lr * state["m"] / (state["v"].sqrt() + eps))


def _eps_inside_sqrt(p, g, state, lr, beta1, beta2, eps, weight_decay):
    p.mul_(1 - lr * weight_decay)
    m_hat, v_hat = _moments(g, state, beta1, beta2)
    p.sub_(lr * m_hat / (v_hat + eps).sqrt())


def _moments_after_step(p, g, state, lr, beta1, beta2, eps, weight_decay):
    t = state["step"]
    p.mul_(1 - lr * weight_decay)
    p.sub_(lr * (state["m"] / (1 - beta1**t)) / ((state["v"] / (1 - beta2**t)).sqrt() + eps))  # last step's m, v
    _moments(g, state, beta1, beta2)


def _decay_scaled_by_adapted_rate(p, g, state, lr, beta1, beta2, eps, weight_decay):
    t = state["step"]
    alpha_t = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
    m_hat, v_hat = _moments(g, state, beta1, beta2)
    p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
    p.sub_(alpha_t * weight_decay * p)  # alpha_t where lr belongs


def _cs336_algorithm_1(p, g, state, lr, beta1, beta2, eps, weight_decay):
    # correct (CS336 Algorithm 1; Kingma & Ba's efficient form): bias corrections folded into
    # alpha_t, eps added to sqrt(v), the decay after the update
    t = state["step"]
    _moments(g, state, beta1, beta2)
    alpha_t = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
    p.sub_(alpha_t * state["m"] / (state["v"].sqrt() + eps))
    p.sub_(lr * weight_decay * p)


# ---- lr_schedule (optim.get_lr_cosine_schedule) -----------------------------------------


def _cosine(progress, max_lr, min_lr):
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)


def lr_warmup_off_by_one(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return max_lr * (it + 1) / warmup
    return min_lr if it > cycle else _cosine((it - warmup) / (cycle - warmup), max_lr, min_lr)


def lr_cosine_over_whole_cycle(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return max_lr * it / warmup
    return min_lr if it > cycle else _cosine(it / cycle, max_lr, min_lr)


def lr_no_floor_after_cycle(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return max_lr * it / warmup
    return _cosine((it - warmup) / (cycle - warmup), max_lr, min_lr)  # rises again after cycle


def lr_warmup_from_min(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return min_lr + (max_lr - min_lr) * it / warmup
    return min_lr if it > cycle else _cosine((it - warmup) / (cycle - warmup), max_lr, min_lr)


def lr_anneals_to_zero(it, max_lr, min_lr, warmup, cycle):
    if it < warmup:
        return max_lr * it / warmup
    return min_lr if it > cycle else _cosine((it - warmup) / (cycle - warmup), max_lr, 0.0)


def lr_cosine_squared(it, max_lr, min_lr, warmup, cycle):
    # correct: (1 + cos(pi p)) / 2 = cos^2(pi p / 2)
    if it < warmup:
        return it / warmup * max_lr
    if it >= cycle:
        return min_lr
    return min_lr + (max_lr - min_lr) * math.cos(math.pi / 2 * (it - warmup) / (cycle - warmup)) ** 2


# ---- gradient_clipping (optim.gradient_clipping) ----------------------------------------


def _grads(parameters):
    return [p.grad for p in parameters if p.grad is not None]


def clip_per_parameter(parameters, max_l2_norm, eps=1e-6):
    for g in _grads(parameters):
        norm = g.float().norm()
        if norm > max_l2_norm:
            g.mul_(max_l2_norm / (norm + eps))


def clip_values(parameters, max_l2_norm, eps=1e-6):
    for g in _grads(parameters):
        g.clamp_(-max_l2_norm, max_l2_norm)


def _norm(grads):
    return torch.stack([g.float().pow(2).sum() for g in grads]).sum().sqrt()


def clip_always_scales(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    scale = max_l2_norm / (_norm(grads) + eps)
    for g in grads:
        g.mul_(scale)


def clip_without_eps(parameters, max_l2_norm, eps=1e-6):
    grads = _grads(parameters)
    norm = _norm(grads)
    if norm > max_l2_norm:
        for g in grads:
            g.mul_(max_l2_norm / norm)


def clip_reads_parameters_twice(parameters, max_l2_norm, eps=1e-6):
    norm = _norm(_grads(parameters))  # an iterator is used up here
    if norm > max_l2_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_l2_norm / (norm + eps))


def clip_coefficient_clamped(parameters, max_l2_norm, eps=1e-6):
    # correct, as torch.nn.utils.clip_grad_norm_ writes it: always multiply by min(1, max / (norm + eps))
    grads = _grads(parameters)
    coef = (max_l2_norm / (_norm(grads) + eps)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))


# ---- the catalogue -----------------------------------------------------------------------

AdamW = optim.AdamW

TRAINING_MISTAKES = [
    Mistake("cross_entropy-log_of_probability", F, "cross_entropy", cross_entropy_log_of_softmax,
            diagnosis="cross-entropy as -log(softmax(x)[target]): a probability that rounds to 0 gives log(0) = -inf "
                      "(use logsumexp(x) - x[target])"),
    Mistake("cross_entropy-no_max_subtraction", F, "cross_entropy", cross_entropy_no_max_subtraction,
            diagnosis="cross-entropy as log(sum(exp(x))) - x[target] without subtracting the max (exp overflows)"),
    Mistake("cross_entropy-sum_not_mean", F, "cross_entropy", cross_entropy_sum_not_mean,
            diagnosis="cross-entropy summed over positions instead of averaged"),
    Mistake("cross_entropy-normalised_over_positions", F, "cross_entropy", cross_entropy_normalised_over_positions,
            diagnosis="cross-entropy with the softmax over the first (batch) dimension instead of the last (classes)"),
    Mistake("cross_entropy-indexed_not_gathered", F, "cross_entropy", cross_entropy_indexed_not_gathered,
            diagnosis="cross-entropy taking x[:, targets] (every row's logit of every target) instead of each "
                      "row's own target logit (gather)"),
    Mistake("adamw-l2_in_gradient", AdamW, "step", _adamw_step(_adam_l2),
            diagnosis="Adam with L2 regularisation (weight_decay * theta added to the gradient) instead of "
                      "decoupled weight decay"),
    Mistake("adamw-no_bias_correction", AdamW, "step", _adamw_step(_no_bias_correction),
            diagnosis="AdamW without bias correction (m and v not divided by 1 - beta^t)"),
    Mistake("adamw-eps_inside_sqrt", AdamW, "step", _adamw_step(_eps_inside_sqrt),
            diagnosis="AdamW with eps inside the square root: sqrt(v_hat + eps) instead of sqrt(v_hat) + eps"),
    Mistake("adamw-moments_after_update", AdamW, "step", _adamw_step(_moments_after_step),
            diagnosis="AdamW updating theta with the previous step's m and v (moments updated after the step)"),
    Mistake("adamw-decay_scaled_by_adapted_rate", AdamW, "step", _adamw_step(_decay_scaled_by_adapted_rate),
            diagnosis="AdamW decaying by alpha_t * weight_decay * theta (the bias-corrected rate) instead of "
                      "lr * weight_decay * theta"),
    Mistake("lr_schedule-warmup_off_by_one", optim, "get_lr_cosine_schedule", lr_warmup_off_by_one,
            diagnosis="the schedule warming up as (it + 1) / warmup_iters (it must be 0 at it = 0)"),
    Mistake("lr_schedule-cosine_over_whole_cycle", optim, "get_lr_cosine_schedule", lr_cosine_over_whole_cycle,
            diagnosis="the schedule's cosine over it / cosine_cycle_iters instead of (it - warmup_iters) / "
                      "(cosine_cycle_iters - warmup_iters)"),
    Mistake("lr_schedule-no_floor_after_cycle", optim, "get_lr_cosine_schedule", lr_no_floor_after_cycle,
            diagnosis="the schedule's cosine continuing after cosine_cycle_iters (it must stay at min_learning_rate)"),
    Mistake("lr_schedule-warmup_from_min", optim, "get_lr_cosine_schedule", lr_warmup_from_min,
            diagnosis="the schedule warming up from min_learning_rate instead of from 0"),
    Mistake("lr_schedule-anneals_to_zero", optim, "get_lr_cosine_schedule", lr_anneals_to_zero,
            diagnosis="the schedule's cosine annealing to 0 instead of to min_learning_rate"),
    Mistake("gradient_clipping-per_parameter_norms", optim, "gradient_clipping", clip_per_parameter,
            diagnosis="gradient clipping by each parameter's own norm instead of the norm of all gradients together"),
    Mistake("gradient_clipping-clips_values", optim, "gradient_clipping", clip_values,
            diagnosis="gradient clipping that clamps each entry to [-max_l2_norm, max_l2_norm] instead of scaling "
                      "by the L2 norm"),
    Mistake("gradient_clipping-always_scales", optim, "gradient_clipping", clip_always_scales,
            diagnosis="gradient clipping that scales by max_l2_norm / (norm + eps) even when the norm is below "
                      "max_l2_norm"),
    Mistake("gradient_clipping-without_eps", optim, "gradient_clipping", clip_without_eps,
            diagnosis="gradient clipping by max_l2_norm / norm instead of max_l2_norm / (norm + 1e-6)"),
    Mistake("gradient_clipping-reads_parameters_twice", optim, "gradient_clipping", clip_reads_parameters_twice,
            diagnosis="gradient clipping that iterates `parameters` twice: an iterator such as model.parameters() "
                      "is empty the second time, so nothing is scaled (make a list first)"),
]

TRAINING_VARIANTS = [
    Variant("cross_entropy-logsumexp", F, "cross_entropy", cross_entropy_logsumexp),
    Variant("adamw-cs336_algorithm_1", AdamW, "step", _adamw_step(_cs336_algorithm_1)),
    Variant("lr_schedule-cosine_squared", optim, "get_lr_cosine_schedule", lr_cosine_squared),
    Variant("gradient_clipping-clamped_coefficient", optim, "gradient_clipping", clip_coefficient_clamped),
]
