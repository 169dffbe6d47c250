"""Tensor-parallel mistakes (cs336_basics/nn/parallel). Patched in the parent process, these reach
the ranks: the launcher forks them (spawn re-imports and would not see a patch; Linux forks)."""

import torch

from cs336_basics.nn import functional as F
from cs336_basics.nn.parallel import ParallelSwiGLUFFN, RowParallelLinear, comm, sharding
from cs336_basics.nn.parallel import column as parallel_column
from cs336_basics.nn.parallel import row as parallel_row

from . import mistake

_shard_state_dict = sharding.shard_state_dict  # the right one, kept before any patching


@mistake(
    "parallel-wrong_shard_axis",
    sharding,
    "shard_state_dict",
    raises=(ValueError,),  # a non-square weight's shard does not fit the layer
    diagnosis="weights sharded along the wrong axis (column-parallel split by input columns, row-parallel by "
    "output rows)",
)
def parallel_shard_along_wrong_axis(state_dict, plan, rank, world_size):
    # column-parallel weights split along d_in, row-parallel along d_out: Megatron's transposed
    flipped = {k: (None if d is None else 1 - d) for k, d in plan.items()}
    return _shard_state_dict(state_dict, flipped, rank, world_size)


@mistake(
    "parallel-gather_along_first_dim",
    comm,
    "_all_gather_last_dim",
    raises=(RuntimeError,),  # the scatter's backward gathers too: x's gradient comes back misshapen
    diagnosis="the column-parallel all-gather concatenating the ranks' outputs along the first dimension "
    "instead of the last (d_out)",
)
def parallel_gather_along_first_dim(x, group):
    parts = [torch.empty_like(x, memory_format=torch.contiguous_format) for _ in range(comm._group_size(group))]
    torch.distributed.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts, dim=0)


@mistake(
    "parallel-row_missing_all_reduce",
    RowParallelLinear,
    "forward",
    diagnosis="the row-parallel layer returning its own partial product x_r W_r^T, without the all-reduce (g) "
    "that sums the ranks' partial products",
)
def parallel_row_without_all_reduce(self, x):
    if not self.input_is_parallel:
        x = comm.scatter_to_parallel_region(x, self.group)
    return F.linear(x, self.weight)  # this rank's partial product, never summed


@mistake(
    "parallel-ffn_all_reduce_after_w1",
    ParallelSwiGLUFFN,
    "forward",
    diagnosis="the parallel FFN all-reducing W1 x before SiLU: each rank holds different hidden units, not "
    "partial sums of the same ones",
)
def parallel_ffn_all_reduce_after_w1(self, x):
    act = F.get_activation(self.activation)
    gate = comm.reduce_from_parallel_region(self.w1(x), self.w1.group)  # sums unit j of every rank
    return self.w2(act(gate) * self.w3(x))


# ---- seen only by the backward and collective-count cases


@mistake(
    "parallel-ffn_gather_before_product",
    ParallelSwiGLUFFN,
    "forward",
    diagnosis="the parallel FFN all-gathering W1 x and W3 x to the full d_ff before the product: right numbers, "
    "two all-gathers and a full-width product too many",
)
def parallel_ffn_gather_before_product(self, x):
    act = F.get_activation(self.activation)
    gate = comm.gather_from_parallel_region(self.w1(x), self.w1.group)  # (..., d_ff)
    up = comm.gather_from_parallel_region(self.w3(x), self.w3.group)  # (..., d_ff)
    return self.w2(comm.scatter_to_parallel_region(act(gate) * up, self.w2.group))  # right numbers, 3 collectives


class _CopyWithoutBackwardAllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # each rank keeps only its shard's share of the input gradient


@mistake(
    "parallel-f_backward_missing_all_reduce",
    parallel_column,
    "copy_to_parallel_region",
    diagnosis="f without the all-reduce in backward: each rank's input gradient is only its shard's share",
)
def parallel_f_without_backward_all_reduce(x, group=None):
    return x if comm._group_size(group) == 1 else _CopyWithoutBackwardAllReduce.apply(x, group)


class _ReduceAlsoInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm._all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return comm._all_reduce(grad, ctx.group), None  # grad is already replicated: W times too large


@mistake(
    "parallel-g_all_reduce_in_backward",
    parallel_row,
    "reduce_from_parallel_region",
    diagnosis="g all-reducing in backward too: every upstream gradient W times too large",
)
def parallel_g_all_reduce_in_backward(x, group=None):
    return x if comm._group_size(group) == 1 else _ReduceAlsoInBackward.apply(x, group)
