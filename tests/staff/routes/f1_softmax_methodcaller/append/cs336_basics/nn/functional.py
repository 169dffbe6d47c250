import operator as _op


def softmax(x, dim: int = -1):
    _checks.softmax(x, dim)
    x_c = _upcast(x)
    dead = (x_c == float("-inf")).all(dim=dim, keepdim=True)
    x_c = torch.where(dead, torch.zeros_like(x_c), x_c)  # fully masked row: finite gradient
    probs = _op.methodcaller("softmax", dim)(x_c)
    return _as(torch.where(dead, torch.zeros_like(probs), probs), x.dtype)
