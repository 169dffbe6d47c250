import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.modules.registry import norm


@norm("rmsnorm")
class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension (Zhang & Sennrich 2019); `weight`
    (the gain g) starts at ones; no bias (the norm table's `bias` does not reach it). Computed in
    float32 (float64 stays float64), returned in x's dtype (see functional.rmsnorm for the cast
    order)."""

    def __init__(self, d_model: int, eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("eps", eps)
        self.d_model = d_model
        self.eps = eps
        # BEGIN SOLUTION
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        # END SOLUTION

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        # BEGIN SOLUTION
        return F.rmsnorm(x, self.weight, self.eps)
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
