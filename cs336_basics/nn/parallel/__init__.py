"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) for the FFN: column- and row-parallel
linear layers and the SwiGLU FFN built from them as in Meta's llama. `launch` starts process
groups on one machine for the tests and adapters."""

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

__all__ = [
    "ColumnParallelLinear",
    "ParallelSwiGLUFFN",
    "RowParallelLinear",
    "choose_backend",
    "copy_to_parallel_region",
    "gather_from_parallel_region",
    "reduce_from_parallel_region",
    "scatter_to_parallel_region",
]
