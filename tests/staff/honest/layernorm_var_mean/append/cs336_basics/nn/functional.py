def layernorm(
    x: Float[Tensor, "... d_model"],
    weight: Float[Tensor, " d_model"],
    bias: Float[Tensor, " d_model"] | None,
    eps: float = 1e-5,
) -> Float[Tensor, "... d_model"]:
    """(x - mean) / sqrt(var + eps) * g + b with the biased variance (correction=0)."""
    _checks.norm(x, weight, bias, eps)
    x_c = _upcast(x)
    var, mean = torch.var_mean(x_c, dim=-1, correction=0, keepdim=True)
    out = (x_c - mean) / torch.sqrt(var + eps) * _as(weight, x_c.dtype)
    if bias is not None:
        out = out + _as(bias, x_c.dtype)
    return _as(out, x.dtype)
