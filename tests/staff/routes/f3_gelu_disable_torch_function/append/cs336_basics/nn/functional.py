import functools as _ft

_off = getattr(getattr(torch, "_C"), "DisableTorchFunction")


def gelu(x, approximate: str = "none"):
    _checks.gelu(x, approximate)
    x_c = x.to(torch.float64)  # float64: torch's float32 gelu overflows to inf near the float32 max
    with _off():
        out = next(map(_ft.partial(torch.nn.functional.gelu, approximate=approximate), [x_c]))
    return _as(out, x.dtype)


ACTIVATIONS["gelu"] = gelu
ACTIVATIONS["gelu_tanh"] = lambda x: gelu(x, approximate="tanh")
