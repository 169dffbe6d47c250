import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from cs336_basics.nn import functional as F


class RotaryPositionalEmbedding(nn.Module):
    """RoPE (Su et al. 2021) with CS336's convention: adjacent pairs (x0, x1), (x2, x3), ...
    rotate by position * theta^(-2k/d_k). cos and sin are precomputed for positions
    0..max_seq_len-1 as non-persistent buffers (float64, cast at use): nothing of RoPE enters
    the state dict. One instance may be shared by every layer of a model."""

    def __init__(self, theta: float, d_k: int, max_seq_len: int, device=None):
        super().__init__()
        if d_k % 2:
            raise ValueError(f"d_k must be even (RoPE rotates pairs of dimensions), got {d_k}")
        self.theta, self.d_k, self.max_seq_len = theta, d_k, max_seq_len
        self._cast: dict = {}  # (dtype, device) -> (cos, sin) cast once, see tables()
        # BEGIN SOLUTION
        cos, sin = F.rope_cos_sin(d_k, theta, max_seq_len, device=device)
        self.register_buffer("cos", cos, persistent=False)  # (max_seq_len, d_k/2)
        self.register_buffer("sin", sin, persistent=False)
        # END SOLUTION

    def forward(
        self, x: Float[Tensor, "... seq d_k"], token_positions: Int[Tensor, "..."]
    ) -> Float[Tensor, "... seq d_k"]:
        # BEGIN SOLUTION
        return F.rope(x, self.cos, self.sin, token_positions)
        # END SOLUTION

    def tables(self, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """(cos, sin) cast to `dtype` once and kept, so a forward pass does not cast the float64
        tables again at every layer (cast-then-gather equals gather-then-cast)."""
        key = (dtype, self.cos.device)
        if key not in self._cast:
            self._cast[key] = (self.cos.to(dtype), self.sin.to(dtype))
        return self._cast[key]

    def _apply(self, fn, recurse=True):
        # .to(dtype) / .half() would round cos and sin too: keep them in float64, follow moves only.
        cos, sin = self.cos, self.sin
        self._cast = {}
        super()._apply(fn, recurse)
        if cos.is_meta:  # built on the meta device (no data), now materialised: compute the tables
            cos, sin = F.rope_cos_sin(self.d_k, self.theta, self.max_seq_len, device=self.cos.device)
        self.cos, self.sin = cos.to(self.cos.device), sin.to(self.sin.device)
        return self

    def extra_repr(self) -> str:
        return f"theta={self.theta}, d_k={self.d_k}, max_seq_len={self.max_seq_len}"
