"""Confusers: plausible mistakes the catalogue does not name, written to test naming. A snapshot
test may describe what their output shows, but must never give one of them a catalogued
mistake's name (tests/staff/test_names.py). Each is one bug in otherwise correct code."""

import numpy as np
import torch

import cs336_basics.data as data
from cs336_basics import optim

from . import confuser


def _grads(parameters):
    return [p.grad for p in parameters if p.grad is not None]


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


def _windows(dataset, starts, context_length, device):
    positions = np.asarray(starts)[:, None] + np.arange(context_length + 1)
    return torch.from_numpy(np.asarray(dataset[positions], dtype=np.int64)).to(device)


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
