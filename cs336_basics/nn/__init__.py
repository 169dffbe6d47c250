from cs336_basics.nn import convert, functional
from cs336_basics.nn.ffn_width import ffn_hidden_dim
from cs336_basics.nn.modules import (
    Embedding,
    FFNBlock,
    FFNBlockConfig,
    LayerNorm,
    Linear,
    MultiHeadSelfAttention,
    PositionWiseFFN,
    RMSNorm,
    RotaryPositionalEmbedding,
    SwiGLUFFN,
    TransformerBlock,
    TransformerLM,
    TransformerLMConfig,
)

__all__ = [
    "Embedding",
    "FFNBlock",
    "FFNBlockConfig",
    "LayerNorm",
    "Linear",
    "MultiHeadSelfAttention",
    "PositionWiseFFN",
    "RMSNorm",
    "RotaryPositionalEmbedding",
    "SwiGLUFFN",
    "TransformerBlock",
    "TransformerLM",
    "TransformerLMConfig",
    "convert",
    "ffn_hidden_dim",
    "functional",
]
