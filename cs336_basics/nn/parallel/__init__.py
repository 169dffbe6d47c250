"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): column- and row-parallel linear
layers, the SwiGLU FFN and attention built from them as in Meta's llama, and the language model
split by heads and hidden units; `sharding` cuts a full state dict into the ranks' shards.
`launch` starts process groups on one machine for the tests, adapters and
`cs336 generate --tensor-parallel`."""

from cs336_basics.nn.parallel.attention import ParallelAttention
from cs336_basics.nn.parallel.column import ColumnParallelLinear
from cs336_basics.nn.parallel.comm import (
    choose_backend,
    copy_to_parallel_region,
    gather_from_parallel_region,
    reduce_from_parallel_region,
    scatter_to_parallel_region,
)
from cs336_basics.nn.parallel.row import RowParallelLinear
from cs336_basics.nn.parallel.swiglu import ParallelSwiGLUFFN
from cs336_basics.nn.parallel.transformer_lm import ParallelTransformerBlock, ParallelTransformerLM, load_sharded

__all__ = [
    "ColumnParallelLinear",
    "ParallelAttention",
    "ParallelSwiGLUFFN",
    "ParallelTransformerBlock",
    "ParallelTransformerLM",
    "RowParallelLinear",
    "choose_backend",
    "copy_to_parallel_region",
    "gather_from_parallel_region",
    "load_sharded",
    "reduce_from_parallel_region",
    "scatter_to_parallel_region",
]
