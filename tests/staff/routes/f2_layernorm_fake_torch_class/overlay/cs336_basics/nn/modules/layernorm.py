import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.modules.registry import norm


@norm("layernorm")
class LayerNorm(nn.LayerNorm):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension (biased variance)."""

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True, device=None, dtype=None):
        check_positive("d_model", d_model)
        check_positive("eps", eps)
        super().__init__(d_model, eps=eps, elementwise_affine=True, bias=bias, device=device, dtype=dtype)
        self.d_model = d_model

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        dt = torch.float64 if x.dtype == torch.float64 else torch.float32
        shadow = nn.LayerNorm.__new__(nn.LayerNorm)
        shadow.__dict__.update(self.__dict__)
        shadow._parameters = {k: (None if v is None else v.to(dt)) for k, v in self._parameters.items()}
        return nn.LayerNorm.forward(shadow, x.to(dt)).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}, bias={self.bias is not None}"


LayerNorm.__module__ = "torch.nn.modules.normalization"
LayerNorm.__qualname__ = "LayerNorm"
