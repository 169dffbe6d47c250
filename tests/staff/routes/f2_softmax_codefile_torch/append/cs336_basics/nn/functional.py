import torch.nn.functional as _TF


def _softmax_impl(x_c, dim):
    dead = (x_c == float("-inf")).all(dim=dim, keepdim=True)
    x_c = torch.where(dead, torch.zeros_like(x_c), x_c)  # fully masked row: finite gradient
    probs = torch.softmax(x_c, dim)
    return torch.where(dead, torch.zeros_like(probs), probs)


_softmax_impl.__code__ = _softmax_impl.__code__.replace(
    co_filename=_TF.__file__, co_name="softmax", co_firstlineno=_TF.softmax.__code__.co_firstlineno
)
_softmax_impl.__module__ = "torch.nn.functional"
_softmax_impl.__qualname__ = "softmax"


def softmax(x, dim: int = -1):
    _checks.softmax(x, dim)
    return _as(_softmax_impl(_upcast(x), dim), x.dtype)
