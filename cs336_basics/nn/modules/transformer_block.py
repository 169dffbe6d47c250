"""The pre-norm decoder layer (Xiong et al. 2020; CS336 section 3.5, figure 2; Meta's llama):
    h   = x + MultiHeadSelfAttention(RMSNorm_1(x))
    out = h + SwiGLU(RMSNorm_2(h))
The second line is the FFN sub-block, FFNBlock's forward, applied to this layer's own ln2 and
ffn. The layer holds its four parts side by side, with CS336's names: ln1, attn, ln2, ffn.

The ablations (CS336 section 7.3) are settings of the layer:
    norm="post"  h = RMSNorm_1(x + attn(x)), out = RMSNorm_2(h + ffn(h))   (Vaswani et al. 2017)
    norm="none"  h = x + attn(x), out = h + ffn(h): ln1 and ln2 are identities, without weights
    ffn="silu"   ffn(x) = W2 SiLU(W1 x), a bias-free PositionWiseFFN: 2 d_model d_ff weights against
                 SwiGLU's 3 d_model d_ff, so d_ff = 4 d_model matches SwiGLU's at d_ff = 8/3 d_model
                 (8 d_model^2 each).
`norm_type` (torchtitan's name) picks the norms' kind by its name in the norm table,
registry.NORMS (default "rmsnorm")."""

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from cs336_basics.nn.modules.attention import MultiHeadSelfAttention
from cs336_basics.nn.modules.ffn_block import FFNBlock, FFNBlockConfig
from cs336_basics.nn.modules.registry import FFNS, NORMS
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding

NORM_PLACEMENTS = ("pre", "post", "none")
# The layer's FFN by name, as FFNBlockConfig settings.
BLOCK_FFNS = {"swiglu": {}, "silu": {"ffn": "positionwise", "activation": "silu", "bias": False}}


class TransformerBlock(nn.Module):
    """One decoder layer: attention (ln1, attn) in front of the FFN sub-block (ln2, ffn: RMSNorm
    and SwiGLUFFN, which the given code builds as FFNBlock does). With max_seq_len and theta it
    builds its own RoPE; `rope` passes a shared one instead (a language model shares one
    between its layers); neither: no RoPE. `norm` and `ffn` choose the ablations, `norm_type`
    the norms' kind (above)."""

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
        norm_type: str = "rmsnorm",
        device=None,
        dtype=None,
    ):
        super().__init__()
        settings = (("norm", norm, NORM_PLACEMENTS), ("ffn", ffn, BLOCK_FFNS), ("norm_type", norm_type, NORMS))
        for name, value, valid in settings:
            if value not in valid:
                raise ValueError(f"{name} must be one of {list(valid)}, got {value!r}")
        self.ffn_config = FFNBlockConfig(d_model, d_ff, norm=norm_type, eps=eps, **BLOCK_FFNS[ffn])
        self.norm = norm
        factory = dict(device=device, dtype=dtype)
        # the FFN sub-block, registered (and its weights drawn) before ln1 and attn
        self.ln2 = self.new_norm(**factory)
        self.ffn = self.new_ffn(**factory)
        if rope is None and theta is not None and max_seq_len is not None:
            rope = RotaryPositionalEmbedding(theta, d_model // num_heads, max_seq_len, device=device)
        # BEGIN SOLUTION
        self.ln1 = nn.Identity() if norm == "none" else self.new_norm(**factory)
        if norm == "none":
            self.ln2 = nn.Identity()
        self.attn = self.new_attention(d_model, num_heads, num_kv_heads, rope, **factory)
        # END SOLUTION

    def new_norm(self, device=None, dtype=None) -> nn.Module:
        """One of the layer's norms over d_model with its eps, of kind `norm_type` (registry.NORMS;
        RMSNorm by default). Given: builds ln2; build ln1 with it."""
        c = self.ffn_config
        return NORMS[c.norm](c.d_model, eps=c.eps, bias=c.bias, device=device, dtype=dtype)

    def new_ffn(self, device=None, dtype=None) -> nn.Module:
        """The FFN of self.ffn_config from the FFN table, registry.FFNS (ParallelTransformerBlock's
        is split over its ranks). Given: builds ffn."""
        c = self.ffn_config
        return FFNS[c.ffn](c.d_model, c.d_ff, activation=c.activation, bias=c.bias, device=device, dtype=dtype)

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
            h = self.ln1(x + self.attn(x, token_positions, kv_cache, attention_mask))
            return self.ln2(h + self.ffn(h))
        h = x + self.attn(self.ln1(x), token_positions, kv_cache, attention_mask)
        return FFNBlock.forward(self, h)  # h + ffn(ln2(h)), the FFN sub-block's formula on this layer's ln2, ffn
        # END SOLUTION
