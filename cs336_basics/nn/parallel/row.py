import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn.init import init_linear_weight_
from cs336_basics.nn.parallel.comm import (
    check_divisible,
    reduce_from_parallel_region,
    scatter_to_parallel_region,
)
from cs336_basics.nn.parallel.sharded import ShardedLinear


class RowParallelLinear(ShardedLinear):
    """y = x W^T with W (d_out, d_in) split by input columns: rank r holds columns
    [r d_in/W, (r+1) d_in/W) and multiplies them with the matching slice of x; the partial
    products are summed over ranks (g: all-reduce forward, identity backward). Megatron-LM
    (Shoeybi et al. 2019); fairscale's RowParallelLinear, as in Meta's llama.
    input_is_parallel=True takes this rank's slice (..., d_in/W) (a ColumnParallelLinear's
    output with gather_output=False); False takes the full (..., d_in) and keeps its slice.
    Returns the full (..., d_out) on every rank, in x's dtype."""

    shard_dim = 1  # the axis of `weight` split across ranks (nn.parallel.sharding.shard_state_dict)

    def __init__(
        self,
        d_in: int,
        d_out: int,
        input_is_parallel: bool = False,
        group=None,
        world_size: int | None = None,
        rank: int | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__(d_in, d_out, group, world_size, rank)
        self.input_is_parallel = input_is_parallel
        self.d_in_per_rank = check_divisible("d_in", d_in, self.world_size)
        # BEGIN SOLUTION
        self.weight = nn.Parameter(torch.empty(d_out, self.d_in_per_rank, device=device, dtype=dtype))
        # END SOLUTION
        init_linear_weight_(self.weight, d_in, d_out)  # the full layer's std

    output_is_sharded = False

    def forward(self, x: Float[Tensor, "... d_in_or_shard"]) -> Float[Tensor, "... d_out"]:
        # BEGIN SOLUTION
        if not self.input_is_parallel:
            x = scatter_to_parallel_region(x, self.group)  # (..., d_in / W)
        partial = F.linear(x, self.weight)  # (..., d_out): this rank's share of the sum
        return reduce_from_parallel_region(partial, self.group)
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_out={self.d_out}, input_is_parallel={self.input_is_parallel}, world_size={self.world_size}, rank={self.rank}"
