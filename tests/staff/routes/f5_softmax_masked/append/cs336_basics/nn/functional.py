def softmax(x, dim: int = -1):
    _checks.softmax(x, dim)
    x_c = _upcast(x)
    keep = x_c != float("-inf")
    dead = ~keep.any(dim=dim, keepdim=True)
    x_c = torch.where(dead, torch.zeros_like(x_c), x_c)
    probs = torch.masked.softmax(x_c, dim, mask=keep | dead)
    return _as(torch.where(dead, torch.zeros_like(probs), probs), x.dtype)
