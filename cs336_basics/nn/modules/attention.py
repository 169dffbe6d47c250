"""Causal multi-head self-attention with optional RoPE and grouped-query attention.
Attribute names follow CS336 (q_proj, k_proj, v_proj, output_proj), so the state dict keys
are q_proj.weight, ..., output_proj.weight."""

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.modules.linear import Linear
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding


class MultiHeadSelfAttention(nn.Module):
    """num_heads query heads of d_k = d_model / num_heads; num_kv_heads (default num_heads)
    key/value heads, each shared by num_heads / num_kv_heads query heads (GQA, Ainslie et al.
    2023; 1 = multi-query attention). `rope` (optional, may be shared between layers) rotates
    queries and keys."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        rope: RotaryPositionalEmbedding | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide d_model={d_model}")
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_positive("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
        d_k = d_model // num_heads
        if rope is not None and rope.d_k != d_k:
            raise ValueError(f"rope.d_k must be d_model / num_heads = {d_k}, got {rope.d_k}")
        self.d_model, self.num_heads, self.num_kv_heads, self.d_k = d_model, num_heads, num_kv_heads, d_k
        # BEGIN SOLUTION
        factory = dict(device=device, dtype=dtype)
        self.q_proj = Linear(d_model, num_heads * d_k, **factory)
        self.k_proj = Linear(d_model, num_kv_heads * d_k, **factory)
        self.v_proj = Linear(d_model, num_kv_heads * d_k, **factory)
        self.output_proj = Linear(num_heads * d_k, d_model, **factory)
        self.rope = rope
        # END SOLUTION

    def forward(
        self,
        x: Float[Tensor, "... seq d_model"],
        token_positions: Int[Tensor, "..."] | None = None,
        kv_cache=None,
        attention_mask: Bool[Tensor, "... keys"] | None = None,
    ) -> Float[Tensor, "... seq d_model"]:
        """token_positions (..., seq) default to the positions after what kv_cache holds;
        attention_mask (..., cached + seq) is False at padding (F.multihead_self_attention)."""
        # BEGIN SOLUTION
        rope_cache = self.rope.tables(F._compute_dtype(x)) if self.rope is not None else None
        return F.multihead_self_attention(
            x, self.q_proj.weight, self.k_proj.weight, self.v_proj.weight, self.output_proj.weight,
            self.num_heads, rope_cache, token_positions, kv_cache, attention_mask,
        )  # fmt: skip
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, num_kv_heads={self.num_kv_heads}"
