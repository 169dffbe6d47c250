import functools as _ft


def layernorm(x, weight, bias, eps: float = 1e-5):
    _checks.norm(x, weight, bias, eps)
    x_c = _upcast(x)
    d = x.shape[-1]
    w = _as(weight, x_c.dtype)
    b = None if bias is None else _as(bias, x_c.dtype)
    row = _ft.partial(torch.nn.functional.layer_norm, normalized_shape=(d,), weight=w, bias=b, eps=eps)
    out = torch.func.vmap(row)(x_c.reshape(-1, d)).reshape(x_c.shape)
    return _as(out, x.dtype)
