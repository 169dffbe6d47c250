import functools as _ft


def rmsnorm(x, weight, eps: float = 1e-5, cast_before_gain: bool = False):
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    x_c = _upcast(x)
    fn = _ft.lru_cache(maxsize=None)(torch.rms_norm)
    return _as(fn(x_c, (x.shape[-1],), _as(weight, x_c.dtype), eps), x.dtype)
