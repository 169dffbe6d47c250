def rmsnorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, " d_model"],
    eps: float = 1e-5,
    cast_before_gain: bool = False,
) -> Float[Tensor, "... d_model"]:
    """x / sqrt(mean(x^2) + eps) * g with mean(x^2) = (||x||_2 / sqrt(d))^2."""
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    x_c = _upcast(x)
    rms = torch.linalg.vector_norm(x_c, ord=2, dim=-1, keepdim=True) / math.sqrt(x_c.shape[-1])
    return _as(x_c * torch.rsqrt(rms * rms + eps) * _as(weight, x_c.dtype), x.dtype)
