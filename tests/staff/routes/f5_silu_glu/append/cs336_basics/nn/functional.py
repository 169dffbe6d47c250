def silu(x):
    _checks.check_float("x", x)
    x_c = _upcast(x)
    out = torch.nn.functional.glu(torch.stack((x_c, x_c), dim=-1), dim=-1).squeeze(-1)
    return _as(out, x.dtype)


ACTIVATIONS["silu"] = silu
