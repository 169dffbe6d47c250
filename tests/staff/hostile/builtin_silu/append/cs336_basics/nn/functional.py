# hostile sample builtin_silu: appended to the reference's functional.py, replacing its silu by
# PyTorch's built-in
def silu(x):
    _checks.check_float("x", x)
    return torch.nn.functional.silu(x)


ACTIVATIONS["silu"] = silu  # as the reference's silu, replaced in place, would be
