class _StableSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, dim: int) -> Tensor:
        lowest = torch.finfo(x.dtype).min
        shifted = x - x.amax(dim=dim, keepdim=True).clamp(min=lowest)
        exps = shifted.exp()
        total = exps.sum(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).tiny)
        y = exps / total
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad_y: Tensor):
        (y,) = ctx.saved_tensors
        # Jacobian-vector product of softmax: dy_i/dx_j = y_i (delta_ij - y_j)
        inner = (grad_y * y).sum(dim=ctx.dim, keepdim=True)
        return y * (grad_y - inner), None


def softmax(x: Float[Tensor, "..."], dim: int = -1) -> Float[Tensor, "..."]:
    """Stable softmax with a hand-written backward; half types computed in float32."""
    _checks.softmax(x, dim)
    return _as(_StableSoftmax.apply(_upcast(x), dim), x.dtype)
