def linear(
    x: Float[Tensor, "... d_in"], weight: Float[Tensor, "d_out d_in"], bias: Float[Tensor, " d_out"] | None = None
) -> Float[Tensor, "... d_out"]:
    """y = x W^T (+ b) as a 2-D (b)mm on the rows of x."""
    _checks.linear(x, weight, bias)
    rows = x.reshape(-1, x.shape[-1])
    out = torch.mm(rows, weight.t()) if bias is None else torch.addmm(bias, rows, weight.t())
    return out.reshape(*x.shape[:-1], weight.shape[0])
