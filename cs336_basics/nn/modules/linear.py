import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.nn import functional as F
from cs336_basics.nn._checks import check_positive
from cs336_basics.nn.init import init_linear_weight_


class Linear(nn.Module):
    """y = x W^T (+ b); `weight` has shape (out_features, in_features) like torch.nn.Linear, so its
    state dict keys are `weight` and, with bias=True, `bias`. CS336's Linear has no bias (the
    default). Init: weight truncated normal, std sqrt(2/(d_in+d_out)), cut at 3 std; bias zero."""

    def __init__(self, in_features: int, out_features: int, device=None, dtype=None, *, bias: bool = False):
        super().__init__()
        check_positive("in_features", in_features)
        check_positive("out_features", out_features)
        self.in_features = in_features
        self.out_features = out_features
        # BEGIN SOLUTION
        self.weight = nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        init_linear_weight_(self.weight)
        self.bias = nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype)) if bias else None
        # END SOLUTION

    def forward(self, x: Float[Tensor, "... d_in"]) -> Float[Tensor, "... d_out"]:
        # BEGIN SOLUTION
        return F.linear(x, self.weight, self.bias)
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
