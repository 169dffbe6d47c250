"""What ColumnParallelLinear and RowParallelLinear share: the full layer's sizes, the group and
this rank's place in it, each argument checked (fairscale's two layers do the same)."""

from torch import nn

from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.parallel.comm import world_size_and_rank


class ShardedLinear(nn.Module):
    """A linear layer of the full size (d_in, d_out) whose weight is split over a group; the
    subclass says along which axis (`shard_dim`) and builds this rank's block."""

    shard_dim: int  # the axis of `weight` split across ranks (nn.parallel.sharding.shard_state_dict)

    def __init__(self, d_in: int, d_out: int, group=None, world_size: int | None = None, rank: int | None = None):
        super().__init__()
        check_positive("d_in", d_in)
        check_positive("d_out", d_out)
        self.world_size, self.rank = world_size_and_rank(group, world_size, rank)
        self.d_in, self.d_out, self.group = d_in, d_out, group
