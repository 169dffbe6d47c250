"""Multi-head self-attention split by head (Megatron-LM, Shoeybi et al. 2019, §3; Meta's llama
Attention with fairscale layers): q_proj, k_proj, v_proj are column-parallel over heads (rank r
holds query heads [r H/W, (r+1) H/W) and key/value heads [r KV/W, (r+1) KV/W), which are exactly
the kv heads its query heads use under GQA), attention runs on the local heads with no
communication, and output_proj is row-parallel: one all-reduce per forward.
State dict keys equal MultiHeadSelfAttention's (q_proj.weight, ..., output_proj.weight)."""

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.parallel.column import ColumnParallelLinear
from cs336_basics.nn.parallel.comm import (
    check_divisible,
    copy_to_parallel_region,
    reduce_from_parallel_region,
    world_size_and_rank,
)
from cs336_basics.nn.parallel.row import RowParallelLinear


class ParallelAttention(nn.Module):
    """MultiHeadSelfAttention's weights (same state dict keys) sharded by head over the ranks of
    a group. num_heads and num_kv_heads must both divide by the world size. `rope` is shared,
    not sharded (it has no parameters)."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int | None = None, rope=None, group=None,
                 world_size=None, rank=None, device=None, dtype=None):  # fmt: skip
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("num_heads", num_heads)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"need num_heads | d_model and num_kv_heads | num_heads, got d_model={d_model}, "
                             f"num_heads={num_heads}, num_kv_heads={num_kv_heads}")  # fmt: skip
        self.world_size, self.rank = world_size_and_rank(group, world_size, rank)
        self.local_heads = check_divisible("num_heads", num_heads, self.world_size)
        self.local_kv_heads = check_divisible("num_kv_heads", num_kv_heads, self.world_size)
        self.d_model, self.num_heads, self.num_kv_heads, self.group = d_model, num_heads, num_kv_heads, group
        self.d_k = d_model // num_heads
        kw = dict(group=group, world_size=self.world_size, rank=self.rank, device=device, dtype=dtype)
        # BEGIN SOLUTION
        self.q_proj = ColumnParallelLinear(d_model, num_heads * self.d_k, gather_output=False, **kw)
        self.k_proj = ColumnParallelLinear(d_model, num_kv_heads * self.d_k, gather_output=False, **kw)
        self.v_proj = ColumnParallelLinear(d_model, num_kv_heads * self.d_k, gather_output=False, **kw)
        self.output_proj = RowParallelLinear(num_heads * self.d_k, d_model, input_is_parallel=True, **kw)
        # END SOLUTION
        self.rope = rope

    output_is_sharded = False

    def forward(self, x: Float[Tensor, "... seq d_model"], token_positions: Int[Tensor, "..."] | None = None,
                kv_cache=None, attention_mask: Bool[Tensor, "... keys"] | None = None,
                ) -> Float[Tensor, "... seq d_model"]:  # fmt: skip
        """A kv_cache, if given, holds this rank's local kv heads only."""
        # BEGIN SOLUTION
        x = copy_to_parallel_region(x, self.group)  # f, once for q, k and v
        rope_cache = self.rope.tables(F._compute_dtype(x)) if self.rope is not None else None
        partial = F.multihead_self_attention(
            x,
            self.q_proj.weight,
            self.k_proj.weight,
            self.v_proj.weight,
            self.output_proj.weight,
            self.local_heads,
            rope_cache,
            token_positions,
            kv_cache,
            attention_mask,
        )  # (..., seq, d_model): this rank's heads' share of the output projection; fmt: skip
        return reduce_from_parallel_region(partial, self.group)  # g
        # END SOLUTION
