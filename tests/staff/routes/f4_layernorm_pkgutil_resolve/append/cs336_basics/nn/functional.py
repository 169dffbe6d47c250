import pkgutil as _pku

_ln = _pku.resolve_name("torch.nn.functional:" + "layer" + "_norm")


def layernorm(x, weight, bias, eps: float = 1e-5):
    _checks.norm(x, weight, bias, eps)
    x_c = _upcast(x)
    b = None if bias is None else _as(bias, x_c.dtype)
    return _as(_ln(x_c, (x.shape[-1],), _as(weight, x_c.dtype), b, eps), x.dtype)
