import torch.nn.functional as _TF

_g = {"__name__": "torch.nn.functional", "__file__": _TF.__file__, "torch": torch, "__builtins__": __builtins__}
exec(compile("def gelu(input, approximate='none'):\n    return torch._C._nn.gelu(input, approximate=approximate)\n",
             _TF.__file__, "exec"), _g)
_torch_gelu = _g["gelu"]


def gelu(x, approximate: str = "none"):
    _checks.gelu(x, approximate)
    x_c = x.to(torch.float64)  # float64: torch's float32 gelu overflows to inf near the float32 max
    return _as(_torch_gelu(x_c, approximate), x.dtype)


ACTIVATIONS["gelu"] = gelu
ACTIVATIONS["gelu_tanh"] = lambda x: gelu(x, approximate="tanh")
