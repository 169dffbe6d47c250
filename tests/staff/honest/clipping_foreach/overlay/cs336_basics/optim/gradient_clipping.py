"""Gradient clipping by the global L2 norm (Pascanu et al. 2013; CS336 section 4.5;
torch.nn.utils.clip_grad_norm_)."""

from collections.abc import Iterable

import torch


def gradient_clipping(parameters: Iterable[torch.nn.Parameter], max_l2_norm: float, eps: float = 1e-6) -> torch.Tensor:
    """Scale every gradient in place by max_l2_norm / (norm + eps) if the L2 norm of all the
    gradients together, `norm`, exceeds max_l2_norm; leave them unchanged otherwise. Parameters
    without a gradient are skipped. Returns `norm` (before clipping), as a float32 tensor (float64
    if a gradient is float64); the norm is accumulated in that dtype, the scaling runs in each
    gradient's own dtype."""
    if not max_l2_norm > 0:
        raise ValueError(f"max_l2_norm must be > 0, got {max_l2_norm!r}")
    grads = [p.grad for p in parameters if p.grad is not None]
    for g in grads:
        if g.is_sparse:
            raise RuntimeError("gradient_clipping does not support sparse gradients")
    dtype = torch.float64 if any(g.dtype == torch.float64 for g in grads) else torch.float32
    if not grads:
        return torch.zeros((), dtype=dtype)
    # BEGIN SOLUTION
    # per-gradient L2 norms in one multi-tensor call (in the accumulation dtype), then
    # sqrt(sum_i norm_i^2): the norm of all the gradients together
    norms = torch._foreach_norm([g.to(dtype) for g in grads], 2)
    norm = torch.stack(norms).pow(2).sum().sqrt()
    if norm > max_l2_norm:
        scale = max_l2_norm / (norm + eps)
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
        for g in grads:
            by_dtype.setdefault(g.dtype, []).append(g)
        for dt, group in by_dtype.items():
            torch._foreach_mul_(group, scale.to(dt))
    return norm
    # END SOLUTION
