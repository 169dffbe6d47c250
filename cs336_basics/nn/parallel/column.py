import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn.init import init_linear_weight_
from cs336_basics.nn.parallel.comm import (
    check_divisible,
    copy_to_parallel_region,
    gather_from_parallel_region,
)
from cs336_basics.nn.parallel.sharded import ShardedLinear


class ColumnParallelLinear(ShardedLinear):
    """y = x W^T with W (d_out, d_in) split by output rows: rank r holds rows
    [r d_out/W, (r+1) d_out/W), so it computes columns of y (Megatron-LM, Shoeybi et al. 2019;
    fairscale's ColumnParallelLinear, as in Meta's llama). The input is replicated (f: identity
    forward, all-reduce backward). gather_output=True all-gathers y to (..., d_out); False leaves
    this rank's (..., d_out/W), to feed a RowParallelLinear with input_is_parallel=True.
    Runs in x's dtype. Init: the full layer's truncated normal, std sqrt(2/(d_in+d_out))."""

    shard_dim = 0  # the axis of `weight` split across ranks (nn.parallel.sharding.shard_state_dict)

    def __init__(
        self,
        d_in: int,
        d_out: int,
        gather_output: bool = True,
        group=None,
        world_size: int | None = None,
        rank: int | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__(d_in, d_out, group, world_size, rank)
        self.gather_output = gather_output
        self.d_out_per_rank = check_divisible("d_out", d_out, self.world_size)
        # BEGIN SOLUTION
        self.weight = nn.Parameter(torch.empty(self.d_out_per_rank, d_in, device=device, dtype=dtype))
        # END SOLUTION
        init_linear_weight_(self.weight, d_in, d_out)  # the full layer's std

    @property
    def output_is_sharded(self) -> bool:
        return not self.gather_output

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_out_or_shard"]:
        # BEGIN SOLUTION
        x = copy_to_parallel_region(x, self.group)
        y = F.linear(x, self.weight)  # (..., d_out / W)
        return gather_from_parallel_region(y, self.group) if self.gather_output else y  # (..., d_out) or shard
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_out={self.d_out}, gather_output={self.gather_output}, world_size={self.world_size}, rank={self.rank}"
