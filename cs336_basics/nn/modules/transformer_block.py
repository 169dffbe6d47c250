"""The pre-norm decoder layer (Xiong et al. 2020; CS336 section 3.5, figure 2; Meta's llama):
    h   = x + MultiHeadSelfAttention(RMSNorm_1(x))
    out = h + SwiGLU(RMSNorm_2(h))
Attribute names follow CS336: ln1, attn, ln2, ffn."""

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from cs336_basics.nn.modules.attention import MultiHeadSelfAttention
from cs336_basics.nn.modules.rmsnorm import RMSNorm
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding
from cs336_basics.nn.modules.swiglu import SwiGLUFFN


class TransformerBlock(nn.Module):
    """One decoder layer. With max_seq_len and theta it builds its own RoPE; `rope` passes a
    shared one instead (a language model shares one between its layers); neither: no RoPE."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        max_seq_len: int | None = None,
        theta: float | None = None,
        num_kv_heads: int | None = None,
        eps: float = 1e-5,
        rope: RotaryPositionalEmbedding | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        if rope is None and theta is not None and max_seq_len is not None:
            rope = RotaryPositionalEmbedding(theta, d_model // num_heads, max_seq_len, device=device)
        # BEGIN SOLUTION
        self.ln1 = RMSNorm(d_model, eps=eps, **factory)
        self.attn = MultiHeadSelfAttention(d_model, num_heads, num_kv_heads, rope=rope, **factory)
        self.ln2 = RMSNorm(d_model, eps=eps, **factory)
        self.ffn = SwiGLUFFN(d_model, d_ff, **factory)
        # END SOLUTION

    def forward(
        self,
        x: Float[Tensor, "... seq d_model"],
        token_positions: Int[Tensor, "..."] | None = None,
        kv_cache=None,
        attention_mask: Bool[Tensor, "... keys"] | None = None,
    ) -> Float[Tensor, "... seq d_model"]:
        # BEGIN SOLUTION
        h = x + self.attn(self.ln1(x), token_positions, kv_cache, attention_mask)
        return h + self.ffn(self.ln2(h))
        # END SOLUTION
