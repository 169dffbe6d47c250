# hostile sample changes_input: appended to the reference's functional.py, replacing its rmsnorm by
# one that returns the right output but zeroes the caller's input
def rmsnorm(x, weight, eps=1e-5, cast_before_gain=False):
    _checks.norm(x, weight, None, eps)
    if cast_before_gain:  # given
        return rmsnorm(x, torch.ones_like(weight), eps) * weight.to(x.dtype)
    x_c = x.to(torch.float32)
    out = (x_c * torch.rsqrt(x_c.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.to(torch.float32)).to(x.dtype)
    x.zero_()  # the right output, but the caller's input is gone
    return out
