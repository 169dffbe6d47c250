def rmsnorm(x, weight, eps: float = 1e-5, cast_before_gain: bool = False):
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    x_c = _upcast(x)
    d = x.shape[-1]
    pad = torch.full((*x_c.shape[:-1], 1), math.sqrt(d * eps), dtype=x_c.dtype, device=x_c.device)
    unit = torch.nn.functional.normalize(torch.cat([x_c, pad], dim=-1), p=2.0, dim=-1, eps=0.0)[..., :d]
    return _as(unit * math.sqrt(d) * _as(weight, x_c.dtype), x.dtype)
