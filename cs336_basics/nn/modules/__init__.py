from cs336_basics.nn.modules.attention import MultiHeadSelfAttention
from cs336_basics.nn.modules.embedding import Embedding
from cs336_basics.nn.modules.ffn_block import FFNBlock, FFNBlockConfig
from cs336_basics.nn.modules.layernorm import LayerNorm
from cs336_basics.nn.modules.linear import Linear
from cs336_basics.nn.modules.positionwise_ffn import PositionWiseFFN
from cs336_basics.nn.modules.rmsnorm import RMSNorm
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding
from cs336_basics.nn.modules.swiglu import SwiGLUFFN
from cs336_basics.nn.modules.transformer_block import TransformerBlock
from cs336_basics.nn.modules.transformer_lm import TransformerLM, TransformerLMConfig

__all__ = [
    "Embedding", "FFNBlock", "FFNBlockConfig", "LayerNorm", "Linear", "MultiHeadSelfAttention", "PositionWiseFFN",
    "RMSNorm", "RotaryPositionalEmbedding", "SwiGLUFFN", "TransformerBlock", "TransformerLM", "TransformerLMConfig",
]  # fmt: skip
