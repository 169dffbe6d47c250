"""Backend choice and Megatron-LM's conjugate communication operators (Shoeybi et al. 2019, §3).

Tensor parallelism needs four autograd functions, each the transpose of another:

    copy_to_parallel_region      "f": identity forward,            all-reduce backward
    reduce_from_parallel_region  "g": all-reduce forward,          identity backward
    gather_from_parallel_region      all-gather (last dim) forward, split backward
    scatter_to_parallel_region       split (last dim) forward,      all-gather backward

The same four are in Meta's llama through fairscale.nn.model_parallel.mappings. Like them, each
is the identity when the group has one rank (no collective is issued). Every collective goes
through `torch.distributed` by attribute lookup at call time, so a test can count them by
patching `torch.distributed.all_reduce` / `all_gather`.
"""

import os

import torch
import torch.distributed as dist
from einops import rearrange
from torch import Tensor

BACKEND_ENV = "CS336_DIST_BACKEND"
BACKENDS = ("gloo", "nccl")


def choose_backend(backend: str | None = None) -> str:
    """`backend` if given, else $CS336_DIST_BACKEND if set, else nccl when CUDA is present and gloo
    (CPU) otherwise."""
    chosen = backend or os.environ.get(BACKEND_ENV) or ("nccl" if torch.cuda.is_available() else "gloo")
    if chosen not in BACKENDS:
        source = "backend" if backend else BACKEND_ENV
        raise ValueError(f"{source} must be one of {list(BACKENDS)}, got {chosen!r}")
    return chosen


def world_size_and_rank(group=None, world_size: int | None = None, rank: int | None = None) -> tuple[int, int]:
    """(world size, rank) of `group`; explicit values win. Without a process group: (1, 0), so a
    module can be built (e.g. to read its shard shapes) outside any group."""
    if world_size is None:
        world_size = dist.get_world_size(group) if dist.is_initialized() else 1
    if rank is None:
        rank = dist.get_rank(group) if dist.is_initialized() else 0
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size={world_size}), got {rank}")
    return world_size, rank


def check_divisible(name: str, value: int, world_size: int) -> int:
    """value // world_size; ValueError naming both numbers when it does not divide."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if value % world_size != 0:
        raise ValueError(f"{name}={value} is not divisible by world_size={world_size}")
    return value // world_size


def _group_size(group) -> int:
    return dist.get_world_size(group) if dist.is_initialized() else 1


def _all_reduce(x: Tensor, group) -> Tensor:
    """Sum of x over the group, in a new tensor (autograd never sees an in-place collective)."""
    out = x.contiguous().clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    return out


def _all_gather_last_dim(x: Tensor, group) -> Tensor:
    """Every rank's x concatenated in rank order along the last dim: (..., n) -> (..., n * W)."""
    world_size = _group_size(group)
    x = x.contiguous()
    flat = x.new_empty(world_size * x.numel())  # one buffer holding every rank's x, rank after rank
    dist.all_gather_into_tensor(flat, x.reshape(-1), group=group)
    stacked = flat.view(world_size, *x.shape)  # (W, ..., n)
    return rearrange(stacked, "w ... n -> ... (w n)")


def _split_last_dim(x: Tensor, group) -> Tensor:
    """This rank's slice of the last dim: (..., n * W) -> (..., n)."""
    world_size, rank = _group_size(group), dist.get_rank(group)
    check_divisible("last dimension", x.shape[-1], world_size)
    return x.chunk(world_size, dim=-1)[rank].contiguous()


class _CopyToParallelRegion(torch.autograd.Function):
    """f: the input of a column-parallel layer is replicated; each rank's gradient of it is
    only its shard's contribution, so backward sums them."""

    @staticmethod
    def forward(ctx, x: Tensor, group) -> Tensor:
        ctx.group = group
        # BEGIN SOLUTION
        return x.view_as(x)
        # END SOLUTION

    @staticmethod
    def backward(ctx, grad: Tensor):
        # BEGIN SOLUTION
        return _all_reduce(grad, ctx.group), None
        # END SOLUTION


class _ReduceFromParallelRegion(torch.autograd.Function):
    """g: the partial products of a row-parallel layer are summed; the sum's gradient reaches
    every rank's partial product unchanged."""

    @staticmethod
    def forward(ctx, x: Tensor, group) -> Tensor:
        # BEGIN SOLUTION
        return _all_reduce(x, group)
        # END SOLUTION

    @staticmethod
    def backward(ctx, grad: Tensor):
        # BEGIN SOLUTION
        return grad, None
        # END SOLUTION


class _GatherFromParallelRegion(torch.autograd.Function):
    """All-gather along the last dim forward; backward keeps this rank's slice of the gradient."""

    @staticmethod
    def forward(ctx, x: Tensor, group) -> Tensor:
        ctx.group = group
        # BEGIN SOLUTION
        return _all_gather_last_dim(x, group)
        # END SOLUTION

    @staticmethod
    def backward(ctx, grad: Tensor):
        # BEGIN SOLUTION
        return _split_last_dim(grad, ctx.group), None
        # END SOLUTION


class _ScatterToParallelRegion(torch.autograd.Function):
    """Keep this rank's slice of the last dim forward; backward all-gathers the gradient."""

    @staticmethod
    def forward(ctx, x: Tensor, group) -> Tensor:
        ctx.group = group
        # BEGIN SOLUTION
        return _split_last_dim(x, group)
        # END SOLUTION

    @staticmethod
    def backward(ctx, grad: Tensor):
        # BEGIN SOLUTION
        return _all_gather_last_dim(grad, ctx.group), None
        # END SOLUTION


def copy_to_parallel_region(x: Tensor, group=None) -> Tensor:
    """f: identity forward, all-reduce (sum) of the gradient backward."""
    return x if _group_size(group) == 1 else _CopyToParallelRegion.apply(x, group)


def reduce_from_parallel_region(x: Tensor, group=None) -> Tensor:
    """g: all-reduce (sum) forward, identity backward."""
    return x if _group_size(group) == 1 else _ReduceFromParallelRegion.apply(x, group)


def gather_from_parallel_region(x: Tensor, group=None) -> Tensor:
    """(..., n) -> (..., n * W): all-gather forward, split backward."""
    return x if _group_size(group) == 1 else _GatherFromParallelRegion.apply(x, group)


def scatter_to_parallel_region(x: Tensor, group=None) -> Tensor:
    """(..., n * W) -> (..., n): split forward, all-gather backward."""
    return x if _group_size(group) == 1 else _ScatterToParallelRegion.apply(x, group)
