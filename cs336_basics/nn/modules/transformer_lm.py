"""The decoder-only language model (CS336 section 3.1, figure 1; Meta's llama):
    logits = LMHead(RMSNorm(Block_L(... Block_1(Embedding(ids)))))
Attribute names follow CS336: token_embeddings, layers.{i}, ln_final, lm_head. With tied
embeddings (Press & Wolf 2017; SmolLM2) there is no lm_head: the logits use
token_embeddings.weight, and the state dict has no lm_head.weight.

Three settings switch off or swap one part each (CS336's ablations; TransformerBlock has the rules):
norm = "pre" (the default), "post" or "none" (every RMSNorm removed, ln_final included);
position = "rope" (the default) or "none" (NoPE: no rotation, no position signal but the causal mask);
ffn = "swiglu" (the default) or "silu" (W2 SiLU(W1 x), a PositionWiseFFN without biases).
norm_type names the kind of every norm, ln_final's included, in the norm table registry.NORMS
(default "rmsnorm")."""

from dataclasses import dataclass

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from cs336_basics.nn import _checks
from cs336_basics.nn import functional as F
from cs336_basics.nn.kv_cache import KVCache
from cs336_basics.nn.modules.embedding import Embedding
from cs336_basics.nn.modules.linear import Linear
from cs336_basics.nn.modules.registry import NORMS
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding
from cs336_basics.nn.modules.transformer_block import BLOCK_FFNS, NORM_PLACEMENTS, TransformerBlock

POSITIONS = ("rope", "none")


@dataclass
class TransformerLMConfig:
    vocab_size: int
    context_length: int
    d_model: int
    num_layers: int
    num_heads: int
    d_ff: int
    rope_theta: float = 10000.0
    num_kv_heads: int | None = None  # None: num_heads (multi-head); fewer: grouped-query attention
    eps: float = 1e-5
    tie_embeddings: bool = False
    norm: str = "pre"  # one of NORM_PLACEMENTS: pre-norm, post-norm, or no RMSNorm at all
    position: str = "rope"  # one of POSITIONS: RoPE, or none (NoPE)
    ffn: str = "swiglu"  # one of BLOCK_FFNS: SwiGLU, or the SiLU FFN (take d_ff = 4 d_model to match)
    norm_type: str = "rmsnorm"  # the norms' kind, a name of registry.NORMS (torchtitan's `norm_type`)

    def __post_init__(self):
        for name in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff", "rope_theta", "eps"):
            _checks.check_positive(name, getattr(self, name))
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads={self.num_heads} must divide d_model={self.d_model}")
        if self.num_kv_heads is not None and (self.num_kv_heads <= 0 or self.num_heads % self.num_kv_heads):
            raise ValueError(f"num_kv_heads must divide num_heads={self.num_heads}, got {self.num_kv_heads}")
        for name, valid in (
            ("norm", NORM_PLACEMENTS),
            ("position", POSITIONS),
            ("ffn", BLOCK_FFNS),
            ("norm_type", NORMS),
        ):
            if getattr(self, name) not in valid:
                raise ValueError(f"{name} must be one of {list(valid)}, got {getattr(self, name)!r}")


class TransformerLM(nn.Module):
    def __init__(self, config: TransformerLMConfig, device=None, dtype=None):
        super().__init__()
        self.config = c = config
        factory = dict(device=device, dtype=dtype)
        # BEGIN SOLUTION
        rope = None
        if c.position == "rope":
            rope = RotaryPositionalEmbedding(c.rope_theta, c.d_model // c.num_heads, c.context_length, device=device)
        self.token_embeddings = Embedding(c.vocab_size, c.d_model, **factory)
        self.layers = nn.ModuleList(self.new_layer(rope, **factory) for _ in range(c.num_layers))
        self.ln_final = nn.Identity() if c.norm == "none" else NORMS[c.norm_type](c.d_model, eps=c.eps, **factory)
        self.lm_head = None if c.tie_embeddings else Linear(c.d_model, c.vocab_size, **factory)
        # END SOLUTION

    def new_layer(self, rope: RotaryPositionalEmbedding | None, device=None, dtype=None) -> nn.Module:
        """One decoder layer of this model sharing `rope` (None: NoPE): a TransformerBlock
        (ParallelTransformerLM's is split over its ranks). Given: __init__ builds every layer with it."""
        c = self.config
        # norm_type only when it is not the blocks' default, RMSNorm: a TransformerBlock with
        # CS336's arguments alone still builds the default model
        kind = {} if c.norm_type == "rmsnorm" else {"norm_type": c.norm_type}
        return TransformerBlock(c.d_model, c.num_heads, c.d_ff, num_kv_heads=c.num_kv_heads, eps=c.eps, rope=rope,
                                norm=c.norm, ffn=c.ffn, **kind, device=device, dtype=dtype)  # fmt: skip

    def new_kv_cache(self, max_len: int | None = None) -> list[KVCache]:
        """One empty KVCache per layer, holding up to max_len (default context_length) positions."""
        return [KVCache(max_len or self.config.context_length) for _ in self.layers]

    def forward(
        self,
        in_indices: Int[Tensor, "... seq"],
        token_positions: Int[Tensor, "..."] | None = None,
        kv_cache: list[KVCache] | None = None,
        attention_mask: Bool[Tensor, "... keys"] | None = None,
    ) -> Float[Tensor, "... seq vocab_size"]:
        """Logits for every position. Sequences may be shorter than context_length; with
        kv_cache, in_indices are the tokens after those the cache holds. A batch of left-padded
        prompts passes attention_mask (..., cached + seq), False at padding, and token_positions
        counting each sequence's own tokens (the padding may then make the cache longer than
        context_length: the positions are what must fit)."""
        seq, past = in_indices.shape[-1], kv_cache[0].length if kv_cache else 0
        _checks.model_inputs(in_indices, token_positions, attention_mask, past, self.config.context_length)
        # BEGIN SOLUTION
        if token_positions is None:  # built once here, not again in every layer's attention
            token_positions = torch.arange(past, past + seq, device=in_indices.device)  # (seq,)
        x = self.token_embeddings(in_indices)  # (..., seq, d_model); checks the ids
        # Every layer gets x, positions and masks checked above and weights this model built:
        # their kernels need not check them again.
        with _checks.checked_once():
            for i, layer in enumerate(self.layers):
                x = layer(x, token_positions, kv_cache[i] if kv_cache else None, attention_mask)
            x = self.ln_final(x)
            head = self.token_embeddings.weight if self.lm_head is None else self.lm_head.weight
            return F.linear(x, head)  # (..., seq, vocab_size)
        # END SOLUTION
