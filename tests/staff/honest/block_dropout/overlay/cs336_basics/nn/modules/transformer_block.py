"""The pre-norm decoder layer (Xiong et al. 2020; CS336 section 3.5, figure 2; Meta's llama):
    h   = x + MultiHeadSelfAttention(RMSNorm_1(x))
    out = h + SwiGLU(RMSNorm_2(h))
The second line is the FFN sub-block, FFNBlock, which this layer extends with the first.
Attribute names follow CS336: ln1, attn, ln2, ffn.

The ablations (CS336 section 7.3) are settings of the layer:
    norm="post"  h = RMSNorm_1(x + attn(x)), out = RMSNorm_2(h + ffn(h))   (Vaswani et al. 2017)
    norm="none"  h = x + attn(x), out = h + ffn(h): ln1 and ln2 are identities, without weights
    ffn="silu"   ffn(x) = W2 SiLU(W1 x), a bias-free PositionWiseFFN: 2 d_model d_ff weights against
                 SwiGLU's 3 d_model d_ff, so d_ff = 4 d_model matches SwiGLU's at d_ff = 8/3 d_model
                 (8 d_model^2 each)."""

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from cs336_basics.nn.modules.attention import MultiHeadSelfAttention
from cs336_basics.nn.modules.ffn_block import FFNBlock, FFNBlockConfig
from cs336_basics.nn.modules.rmsnorm import RMSNorm
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding

NORM_PLACEMENTS = ("pre", "post", "none")
# The layer's FFN by name, as FFNBlockConfig settings.
BLOCK_FFNS = {"swiglu": {}, "silu": {"ffn": "positionwise", "activation": "silu", "bias": False}}


class TransformerBlock(FFNBlock):
    """One decoder layer: attention (ln1, attn) in front of the FFN sub-block (ln2, ffn: RMSNorm
    and SwiGLUFFN, built by FFNBlock.__init__). With max_seq_len and theta it builds its own
    RoPE; `rope` passes a shared one instead (a language model shares one between its layers);
    neither: no RoPE. `norm` and `ffn` choose the ablations (above)."""

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
        norm: str = "pre",
        ffn: str = "swiglu",
        device=None,
        dtype=None,
    ):
        if norm not in NORM_PLACEMENTS:
            raise ValueError(f"norm must be one of {list(NORM_PLACEMENTS)}, got {norm!r}")
        if ffn not in BLOCK_FFNS:
            raise ValueError(f"ffn must be one of {list(BLOCK_FFNS)}, got {ffn!r}")
        ffn_config = FFNBlockConfig(d_model, d_ff, eps=eps, **BLOCK_FFNS[ffn])
        super().__init__(ffn_config, device=device, dtype=dtype)  # ln2, ffn
        self.norm = norm
        factory = dict(device=device, dtype=dtype)
        if rope is None and theta is not None and max_seq_len is not None:
            rope = RotaryPositionalEmbedding(theta, d_model // num_heads, max_seq_len, device=device)
        # BEGIN SOLUTION
        self.ln1 = nn.Identity() if norm == "none" else RMSNorm(d_model, eps=eps, **factory)
        if norm == "none":
            self.ln2 = nn.Identity()
        self.attn = self.new_attention(d_model, num_heads, num_kv_heads, rope, **factory)
        # residual dropout as in GPT-2 / nanoGPT; p = 0.0 (CS336 trains without it): the identity
        self.attn_dropout = nn.Dropout(0.0)
        self.ffn_dropout = nn.Dropout(0.0)
        # END SOLUTION

    def new_attention(
        self, d_model: int, num_heads: int, num_kv_heads: int | None, rope, device=None, dtype=None
    ) -> nn.Module:
        """The layer's attention, a MultiHeadSelfAttention (ParallelTransformerBlock's is split
        over its ranks). Given: build `attn` with it."""
        return MultiHeadSelfAttention(d_model, num_heads, num_kv_heads, rope=rope, device=device, dtype=dtype)

    def forward(
        self,
        x: Float[Tensor, "... seq d_model"],
        token_positions: Int[Tensor, "..."] | None = None,
        kv_cache=None,
        attention_mask: Bool[Tensor, "... keys"] | None = None,
    ) -> Float[Tensor, "... seq d_model"]:
        # BEGIN SOLUTION
        if self.norm == "post":
            h = self.ln1(x + self.attn_dropout(self.attn(x, token_positions, kv_cache, attention_mask)))
            return self.ln2(h + self.ffn_dropout(self.ffn(h)))
        h = x + self.attn_dropout(self.attn(self.ln1(x), token_positions, kv_cache, attention_mask))
        return h + self.ffn_dropout(self.ffn(self.ln2(h)))
        # END SOLUTION
