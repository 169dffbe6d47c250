def gelu(x, approximate: str = "none"):
    _checks.gelu(x, approximate)
    x_c = _upcast(x)
    if approximate == "tanh":
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c.pow(3))
        out = x_c * torch.special.expit(2.0 * u)
    else:
        out = x_c * torch.special.ndtr(x_c)
    return _as(out, x.dtype)


ACTIVATIONS["gelu"] = gelu
ACTIVATIONS["gelu_tanh"] = lambda x: gelu(x, approximate="tanh")
