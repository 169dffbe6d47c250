def _affine_2d(x2d: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    return torch.mm(x2d, w.t()) if b is None else torch.addmm(b, x2d, w.t())


def positionwise_ffn(
    x: Float[Tensor, "... d_model"],
    w1: Float[Tensor, "d_ff d_model"],
    b1: Float[Tensor, " d_ff"] | None,
    w2: Float[Tensor, "d_model d_ff"],
    b2: Float[Tensor, " d_model"] | None,
    activation: str = "gelu",
) -> Float[Tensor, "... d_model"]:
    """act(x W1^T + b1) W2^T + b2 with addmm on the (rows, d_model) view of x."""
    _checks.positionwise_ffn(x, w1, b1, w2, b2)
    act = get_activation(activation)
    x2d = x.reshape(-1, x.shape[-1])
    hidden = act(_affine_2d(x2d, w1, b1))
    return _affine_2d(hidden, w2, b2).reshape(*x.shape[:-1], w2.shape[0])
