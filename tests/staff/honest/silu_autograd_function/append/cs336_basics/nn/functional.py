class _SiLUFunction(torch.autograd.Function):
    """x * sigmoid(x) with its derivative written out: d/dx = s + x s (1 - s) = s (1 + x (1 - s))."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out: Tensor) -> Tensor:
        x, s = ctx.saved_tensors
        return grad_out * (s * (1.0 + x * (1.0 - s)))


def silu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """SiLU(x) = x * sigmoid(x), through a hand-written autograd Function; half types in float32."""
    _checks.check_float("x", x)
    x_c = _upcast(x)
    return _as(_SiLUFunction.apply(x_c), x.dtype)


ACTIVATIONS["silu"] = silu
