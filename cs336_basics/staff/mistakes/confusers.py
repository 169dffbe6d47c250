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


@confuser("get_batch-reseeds_generator", data, "get_batch")
def get_batch_reseeds_generator(dataset, batch_size, context_length, device, generator=None):
    generator = torch.Generator().manual_seed(0)  # the same draw on every call
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]
