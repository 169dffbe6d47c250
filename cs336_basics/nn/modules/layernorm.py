import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.modules.registry import norm


@norm("layernorm")
class LayerNorm(nn.Module):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension (Ba et al. 2016; biased
    variance); `weight` starts at ones, `bias` at zeros (None when bias=False)."""

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True, device=None, dtype=None):
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("eps", eps)
        self.d_model = d_model
        self.eps = eps
        # BEGIN SOLUTION
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        if bias:
            self.bias = nn.Parameter(torch.zeros(d_model, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        # END SOLUTION

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        return F.layernorm(x, self.weight, self.bias, self.eps)
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}, bias={self.bias is not None}"
