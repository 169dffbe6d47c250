def rmsnorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, " d_model"],
    eps: float = 1e-5,
    cast_before_gain: bool = False,
) -> Float[Tensor, "... d_model"]:
    """x / sqrt(mean(x^2) + eps) * g, the mean square as a row-wise dot product."""
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    x_c = _upcast(x)
    mean_square = torch.einsum("...d,...d->...", x_c, x_c).unsqueeze(-1) / x_c.shape[-1]
    return _as(x_c / torch.sqrt(mean_square + eps) * _as(weight, x_c.dtype), x.dtype)
