"""The decoder language model split over the ranks of a group (Megatron-LM, Shoeybi et al. 2019,
§3; Meta's llama model.py with fairscale's layers):

    attention   ParallelAttention: rank r holds query heads [r H/W, (r+1) H/W) and the kv heads
                they use; its KV cache holds those local kv heads only
    FFN         ParallelSwiGLUFFN: rank r holds d_ff/W hidden units
    replicated  token_embeddings, every RMSNorm, lm_head (whole on every rank: vocabulary
                parallelism would save memory on large vocabularies, not change the numbers)

Two all-reduces per layer in forward (after attention's output_proj and the FFN's w2); every
rank ends each layer with the same residual stream, so every rank computes the same logits.
State dict keys equal TransformerLM's; `sharding.sharding_plan` of this module says how each
is split, so a full TransformerLM state dict loads with `sharding.shard_state_dict` (nn/parallel/sharding.py)."""

from torch import nn

from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding
from cs336_basics.nn.modules.transformer_block import TransformerBlock
from cs336_basics.nn.modules.transformer_lm import TransformerLM, TransformerLMConfig
from cs336_basics.nn.parallel.attention import ParallelAttention
from cs336_basics.nn.parallel.comm import world_size_and_rank
from cs336_basics.nn.parallel.swiglu import ParallelSwiGLUFFN


class ParallelTransformerBlock(TransformerBlock):
    """TransformerBlock (pre-norm: x + attn(ln1(x)), then h + ffn(ln2(h))) whose attn and ffn are
    split over the group; everything else, forward included, is TransformerBlock's."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, num_kv_heads: int | None = None, eps: float = 1e-5,
                 rope: RotaryPositionalEmbedding | None = None, group=None, world_size=None, rank=None,
                 device=None, dtype=None):  # fmt: skip
        # set before TransformerBlock.__init__, which builds attn and ffn with new_attention and new_ffn (below)
        self.split = dict(group=group, world_size=world_size, rank=rank)
        super().__init__(d_model, num_heads, d_ff, num_kv_heads=num_kv_heads, eps=eps, rope=rope, device=device,
                         dtype=dtype)  # fmt: skip

    def new_attention(self, d_model, num_heads, num_kv_heads, rope, device=None, dtype=None) -> nn.Module:
        """This rank's share of the heads: a ParallelAttention."""
        # BEGIN SOLUTION
        return ParallelAttention(d_model, num_heads, num_kv_heads, rope=rope, **self.split, device=device, dtype=dtype)
        # END SOLUTION

    def new_ffn(self, device=None, dtype=None) -> nn.Module:
        """This rank's share of the hidden units: a ParallelSwiGLUFFN."""
        c = self.ffn_config
        # BEGIN SOLUTION
        return ParallelSwiGLUFFN(c.d_model, c.d_ff, **self.split, device=device, dtype=dtype)
        # END SOLUTION


class ParallelTransformerLM(TransformerLM):
    """TransformerLM with every layer a ParallelTransformerBlock; forward, new_kv_cache and
    generation are TransformerLM's. num_heads, num_kv_heads and d_ff must divide by the world
    size (a ValueError names the number and the world size)."""

    def __init__(self, config: TransformerLMConfig, group=None, world_size=None, rank=None, device=None, dtype=None):
        world_size, rank = world_size_and_rank(group, world_size, rank)
        check_shardable(config, world_size)
        if (config.norm, config.ffn) != ("pre", "swiglu"):
            raise ValueError(
                f"ParallelTransformerLM is pre-norm with SwiGLU; got norm={config.norm!r}, ffn={config.ffn!r}"
            )
        if config.norm_type != "rmsnorm":
            raise ValueError(f"ParallelTransformerLM's norms are RMSNorms; got norm_type={config.norm_type!r}")
        # set before TransformerLM.__init__, which builds the layers with new_layer (below)
        self.group, self.world_size, self.rank = group, world_size, rank
        super().__init__(config, device=device, dtype=dtype)

    def new_layer(self, rope: RotaryPositionalEmbedding, device=None, dtype=None) -> nn.Module:
        """One ParallelTransformerBlock, split over this model's ranks, sharing `rope`."""
        c = self.config
        split = dict(group=self.group, world_size=self.world_size, rank=self.rank, device=device, dtype=dtype)
        # BEGIN SOLUTION
        return ParallelTransformerBlock(c.d_model, c.num_heads, c.d_ff, c.num_kv_heads, c.eps, rope, **split)
        # END SOLUTION

    output_is_sharded = False


def check_shardable(config: TransformerLMConfig, world_size: int) -> None:
    """ValueError naming the numbers when the heads or d_ff cannot be split evenly over world_size."""
    kv = config.num_heads if config.num_kv_heads is None else config.num_kv_heads
    bad = [f"{name}={n}" for name, n in (("num_heads", config.num_heads), ("num_kv_heads", kv), ("d_ff", config.d_ff))
           if n % world_size]  # fmt: skip
    if bad:
        raise ValueError(f"{' and '.join(bad)} {'are' if len(bad) > 1 else 'is'} not divisible by world_size={world_size}: each rank must hold "
                         f"whole heads and an equal share of d_ff")  # fmt: skip


def load_sharded(
    config: TransformerLMConfig, state_dict: dict, group=None, device=None, dtype=None
) -> ParallelTransformerLM:
    """This rank's ParallelTransformerLM holding its shard (sharding.shard_state_dict) of a full
    TransformerLM state dict."""
    from cs336_basics.nn import convert
    from cs336_basics.nn.parallel import sharding

    model = ParallelTransformerLM(config, group=group, device=device, dtype=dtype)
    shard = sharding.shard_state_dict(state_dict, sharding.sharding_plan(model), model.rank, model.world_size)
    return convert.load_state_dict(model, shard)
