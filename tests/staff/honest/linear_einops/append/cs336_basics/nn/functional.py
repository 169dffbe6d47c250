def linear(
    x: Float[Tensor, "... d_in"], weight: Float[Tensor, "d_out d_in"], bias: Float[Tensor, " d_out"] | None = None
) -> Float[Tensor, "... d_out"]:
    """y = x W^T (+ b) as an einops einsum over the shared d_in axis."""
    _checks.linear(x, weight, bias)
    y = einsum(x, weight, "... d_in, d_out d_in -> ... d_out")
    if bias is not None:
        y = y + bias
    return y
