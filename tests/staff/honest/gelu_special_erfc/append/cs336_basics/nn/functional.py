def gelu(x: Float[Tensor, "..."], approximate: str = "none") -> Float[Tensor, "..."]:
    """0.5 x erfc(-x / sqrt 2), or x expit(2 sqrt(2/pi) (x + 0.044715 x^3)) for the tanh form."""
    _checks.gelu(x, approximate)
    x_c = _upcast(x)
    if approximate == "tanh":
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c * x_c * x_c)
        out = x_c * torch.special.expit(2.0 * u)
    else:
        out = 0.5 * x_c * torch.special.erfc(-x_c / math.sqrt(2.0))
    return _as(out, x.dtype)


def _gelu_tanh(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    return gelu(x, approximate="tanh")


ACTIVATIONS["gelu"] = gelu
ACTIVATIONS["gelu_tanh"] = _gelu_tanh
