from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.ffn_width import ffn_hidden_dim
from cs336_basics.nn.modules.linear import Linear
from cs336_basics.nn.modules.registry import ffn


@ffn("swiglu")
class SwiGLUFFN(nn.Module):
    """W2 (SiLU(W1 x) * W3 x) (Shazeer 2020; `activation` replaces SiLU) with three bias-free Linears
    (the FFN table's `bias` does not reach them), named as in Meta's Llama checkpoints:
    w1 = gate (d_ff, d_model), w3 = up (d_ff, d_model), w2 = down (d_model, d_ff).
    d_ff=None applies the 8/3 rule rounded up to a multiple of 64 (`ffn_hidden_dim`)."""

    def __init__(self, d_model: int, d_ff: int | None = None, activation: str = "silu", device=None, dtype=None):
        super().__init__()
        check_positive("d_model", d_model)
        if d_ff is None:
            d_ff = ffn_hidden_dim(d_model, multiple_of=64)
        check_positive("d_ff", d_ff)
        F.get_activation(activation)  # fail now on an unknown name, not at the first forward
        self.d_model = d_model
        self.d_ff = d_ff
        self.activation = activation
        # BEGIN SOLUTION
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype)
        self.w3 = Linear(d_model, d_ff, device=device, dtype=dtype)
        # END SOLUTION

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        return F.swiglu_ffn(x, self.w1.weight, self.w2.weight, self.w3.weight, self.activation)
        # END SOLUTION
