def softmax(x: Float[Tensor, "..."], dim: int = -1) -> Float[Tensor, "..."]:
    """exp(x - max) / sum along dim; fully masked rows (all -inf) give zeros via torch.where."""
    _checks.softmax(x, dim)
    x_c = _upcast(x)
    row_max = x_c.detach().amax(dim=dim, keepdim=True)
    row_max = torch.where(row_max == float("-inf"), torch.zeros_like(row_max), row_max)
    exps = torch.exp(x_c - row_max)
    total = exps.sum(dim=dim, keepdim=True)
    total = torch.where(total > 0, total, torch.ones_like(total))
    return _as(exps / total, x.dtype)
