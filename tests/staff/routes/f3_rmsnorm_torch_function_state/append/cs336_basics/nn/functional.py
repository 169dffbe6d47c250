import functools as _ft

_C = getattr(torch, "_C")


def rmsnorm(x, weight, eps: float = 1e-5, cast_before_gain: bool = False):
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:
        return rmsnorm(x, torch.ones_like(weight), eps) * _as(weight, x.dtype)
    x_c = _upcast(x)
    w = _as(weight, x_c.dtype)
    get_state = getattr(_C, "_get_torch_function_state")
    set_state = getattr(_C, "_set_torch_function_state")
    saved = get_state()
    set_state(type(saved).ALL_DISABLED)
    try:
        out = _ft.reduce(lambda acc, f: f(acc, (x.shape[-1],), w, eps), [torch.rms_norm], x_c)
    finally:
        set_state(saved)
    return _as(out, x.dtype)
