"""Every module puts every parameter (and buffer) on the device and in the dtype it is given: a
module that drops them (an Embedding built in float32 inside a float64 model) fails here, naming
the parameter, not later inside attention. The "meta" device stands for any device but the CPU."""

from functools import partial

import pytest
import torch

from cs336_basics.nn import (
    Embedding,
    FFNBlock,
    FFNBlockConfig,
    Linear,
    MultiHeadSelfAttention,
    RotaryPositionalEmbedding,
    TransformerBlock,
    TransformerLM,
    TransformerLMConfig,
)
from cs336_basics.nn.modules.registry import FFNS, NORMS
from cs336_basics.nn.parallel import ColumnParallelLinear, ParallelTransformerLM, RowParallelLinear


def _kinds(table: dict, *sizes: int) -> dict:
    """Every entry of a registry table (NORMS, FFNS), built from the arguments every entry takes,
    with bias=True (the biases too), under the name of the file of the class it enters (nothing
    is built while tests are collected): its component's name (FFNS' "positionwise" builds
    positionwise_ffn.py's PositionWiseFFN); one file each."""
    kinds = {entry.cls.__module__.rpartition(".")[2]: partial(entry, *sizes, bias=True) for entry in table.values()}
    assert len(kinds) == len(table), f"two entries of {list(table)} build classes of one file"
    return kinds


# Each module, built small: the registry's norm and FFN kinds from its tables, the others here.
MODULES = {
    "linear": lambda **kw: Linear(8, 12, bias=True, **kw),  # the bias too
    "embedding": lambda **kw: Embedding(20, 8, **kw),
    **_kinds(NORMS, 8),
    **_kinds(FFNS, 8, 16),
    "ffn_block": lambda **kw: FFNBlock(FFNBlockConfig(8, 16, norm="layernorm", ffn="positionwise", bias=True), **kw),
    "ffn_block_llama": lambda **kw: FFNBlock(FFNBlockConfig(8, 16), **kw),  # RMSNorm and SwiGLU
    "rope": lambda device, dtype: RotaryPositionalEmbedding(10000.0, 8, 16, device=device),  # buffers only
    "mha": lambda **kw: MultiHeadSelfAttention(8, 2, 1, **kw),
    "block": lambda **kw: TransformerBlock(8, 2, 16, 16, 10000.0, **kw),
    "block_ungated": lambda **kw: TransformerBlock(8, 2, 16, 16, 10000.0, ffn="silu", **kw),  # PositionWiseFFN
    "lm": lambda **kw: TransformerLM(TransformerLMConfig(20, 16, 8, 2, 2, 16), **kw),
    # rank 1 of 2, built outside any process group (explicit world_size and rank)
    "parallel_column": lambda **kw: ColumnParallelLinear(8, 12, world_size=2, rank=1, **kw),
    "parallel_row": lambda **kw: RowParallelLinear(12, 8, world_size=2, rank=1, **kw),
    "parallel_model": lambda **kw: ParallelTransformerLM(  # its split attention and SwiGLU FFN
        TransformerLMConfig(20, 16, 8, 2, 2, 16), world_size=2, rank=1, **kw
    ),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
@pytest.mark.parametrize("component", MODULES)
def test_module_parameters_take_the_given_dtype_and_device(component, dtype, device):
    module = MODULES[component](device=device, dtype=dtype)
    wrong = {
        name: (p.dtype, p.device.type)
        for name, p in module.named_parameters()
        if (p.dtype, p.device.type) != (dtype, device)
    }
    assert wrong == {}, (
        f"{type(module).__name__}(..., device={device!r}, dtype={dtype}): these parameters are not: {wrong}"
    )
    moved = {name: b.device.type for name, b in module.named_buffers() if b.device.type != device}
    assert moved == {}, f"{type(module).__name__}(..., device={device!r}): these buffers are elsewhere: {moved}"
