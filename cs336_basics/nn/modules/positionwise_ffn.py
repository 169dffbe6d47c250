from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.modules.linear import Linear
from cs336_basics.nn.modules.registry import ffn


@ffn("positionwise")
class PositionWiseFFN(nn.Module):
    """act(x W1^T + b1) W2^T + b2, the original transformer FFN (Vaswani et al. 2017; GELU as in BERT and GPT-2).
    State dict keys as torch.nn.Linear's and Hugging Face's: w1.weight (d_ff, d_model), w1.bias (d_ff),
    w2.weight (d_model, d_ff), w2.bias (d_model); biases start at zero and are absent when bias=False."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", bias: bool = True, device=None, dtype=None):
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("d_ff", d_ff)
        F.get_activation(activation)  # fail now on an unknown name, not at the first forward
        self.d_model = d_model
        self.d_ff = d_ff
        self.activation = activation
        # BEGIN SOLUTION
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype, bias=bias)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype, bias=bias)
        # END SOLUTION

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        return F.positionwise_ffn(x, self.w1.weight, self.w1.bias, self.w2.weight, self.w2.bias, self.activation)
        # END SOLUTION
