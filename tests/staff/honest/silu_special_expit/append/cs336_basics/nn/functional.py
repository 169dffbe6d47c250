def silu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """x * expit(x), expit = 1 / (1 + exp(-x)) = sigmoid."""
    _checks.check_float("x", x)
    x_c = _upcast(x)
    return _as(x_c * torch.special.expit(x_c), x.dtype)


ACTIVATIONS["silu"] = silu
