@torch.jit.script
def _gelu_kernel(x: Tensor, use_tanh: bool) -> Tensor:
    if use_tanh:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) (x + 0.044715 x^3)
        return 0.5 * x * (1.0 + torch.tanh(inner))
    return 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))  # x / sqrt(2)


def gelu(x: Float[Tensor, "..."], approximate: str = "none") -> Float[Tensor, "..."]:
    """GELU through a TorchScript-compiled kernel; half types computed in float32."""
    _checks.gelu(x, approximate)
    return _as(_gelu_kernel(_upcast(x), approximate == "tanh"), x.dtype)


def _gelu_tanh(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    return gelu(x, approximate="tanh")


ACTIVATIONS["gelu"] = gelu
ACTIVATIONS["gelu_tanh"] = _gelu_tanh
