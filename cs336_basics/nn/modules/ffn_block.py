"""The pre-norm residual feed-forward sub-block of a decoder layer: x + FFN(Norm(x)).

Llama (Touvron et al. 2023) builds it with RMSNorm + SwiGLU, GPT-2 and the pre-norm transformer
(Xiong et al. 2020) with LayerNorm + a GELU FFN; both are one config away, the norm and the FFN
named by the tables of nn/modules/registry.py. It is the second half of a decoder layer
(TransformerBlock holds the same two parts and applies this forward to them), so its attribute
names are CS336's for that half: `ln2` and `ffn`; state dict keys read `ln2.weight`,
`ffn.w1.weight`, ... (Meta's llama names them `ffn_norm` and `feed_forward`; nn.convert renames).
"""

from dataclasses import dataclass

from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.modules.registry import FFNS, NORMS


@dataclass
class FFNBlockConfig:
    d_model: int
    d_ff: int | None = None  # None: the 8/3 rule, multiple of 64 (swiglu only)
    norm: str = "rmsnorm"  # the norm's kind: a name of the norm table, registry.NORMS
    ffn: str = "swiglu"  # a name of the FFN table, registry.FFNS
    activation: str = "silu"  # the gate's nonlinearity (swiglu) or the hidden one (positionwise)
    eps: float = 1e-5
    bias: bool = False  # biases in the positionwise FFN and the LayerNorm

    def __post_init__(self):
        check_positive("d_model", self.d_model)
        if self.norm not in NORMS:
            raise ValueError(f"unknown norm {self.norm!r}; valid names are {list(NORMS)}")
        if self.ffn not in FFNS:
            raise ValueError(f"unknown ffn {self.ffn!r}; valid names are {list(FFNS)}")
        if self.d_ff is not None:
            check_positive("d_ff", self.d_ff)
        elif self.ffn != "swiglu":
            raise ValueError(f"d_ff=None (the 8/3 rule) is for ffn='swiglu'; ffn={self.ffn!r} needs a d_ff")
        check_positive("eps", self.eps)
        F.get_activation(self.activation)


class FFNBlock(nn.Module):
    """x + ffn(ln2(x)), configured by an FFNBlockConfig."""

    def __init__(self, config: FFNBlockConfig, device=None, dtype=None):
        super().__init__()
        self.ffn_config = c = config
        factory = dict(device=device, dtype=dtype)
        self.ln2 = NORMS[c.norm](c.d_model, eps=c.eps, bias=c.bias, **factory)
        self.ffn = self.new_ffn(**factory)

    def new_ffn(self, device=None, dtype=None) -> nn.Module:
        """The FFN of self.ffn_config, built by its entry in the FFN table (registry.FFNS)."""
        c = self.ffn_config
        return FFNS[c.ffn](c.d_model, c.d_ff, activation=c.activation, bias=c.bias, device=device, dtype=dtype)

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        return x + self.ffn(self.ln2(x))
        # END SOLUTION
