from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.parallel.column import ColumnParallelLinear
from cs336_basics.nn.parallel.row import RowParallelLinear


class ParallelSwiGLUFFN(nn.Module):
    """W2 (SiLU(W1 x) * W3 x) split over the ranks of a group as Meta's llama FeedForward does
    (llama/model.py, with fairscale's layers): w1 (gate) and w3 (up) are column-parallel with
    gather_output=False, so each rank holds d_ff/W hidden units and computes its slice of the
    product SiLU(W1 x) * W3 x without communication; w2 (down) is row-parallel with
    input_is_parallel=True and sums the partial outputs: one all-reduce per forward (Shoeybi et
    al. 2019, §3). Backward all-reduces the input's gradient once per column-parallel layer.
    State dict keys equal SwiGLUFFN's (w1.weight, w2.weight, w3.weight), each this rank's shard."""

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        activation: str = "silu",
        group=None,
        world_size=None,
        rank=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("d_ff", d_ff)
        F.get_activation(activation)
        self.d_model, self.d_ff, self.activation = d_model, d_ff, activation
        kw = dict(group=group, world_size=world_size, rank=rank, device=device, dtype=dtype)
        # BEGIN SOLUTION
        self.w1 = ColumnParallelLinear(d_model, d_ff, gather_output=False, **kw)
        self.w2 = RowParallelLinear(d_ff, d_model, input_is_parallel=True, **kw)
        self.w3 = ColumnParallelLinear(d_model, d_ff, gather_output=False, **kw)
        # END SOLUTION
        self.world_size, self.rank = self.w1.world_size, self.w1.rank

    output_is_sharded = False

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        act = F.get_activation(self.activation)
        return self.w2(act(self.w1(x)) * self.w3(x))  # hidden (..., d_ff / W); output (..., d_model)
        # END SOLUTION
