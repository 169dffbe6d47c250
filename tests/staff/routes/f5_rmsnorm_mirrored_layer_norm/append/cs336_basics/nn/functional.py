def rmsnorm(x, weight, eps: float = 1e-5, cast_before_gain: bool = False):
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    x_c = _upcast(x)
    d = x.shape[-1]
    mirrored = torch.cat([x_c, -x_c], dim=-1)
    normed = torch.nn.functional.layer_norm(mirrored, (2 * d,), eps=eps)[..., :d]
    return _as(normed * _as(weight, x_c.dtype), x.dtype)
