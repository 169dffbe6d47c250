def cross_entropy(inputs: Float[Tensor, "... vocab_size"], targets: Int[Tensor, "..."]) -> Float[Tensor, ""]:
    """mean(log sum exp(x - m) - (x[target] - m)), the target picked with take_along_dim."""
    _checks.cross_entropy(inputs, targets)
    logits = _upcast(inputs)
    row_max = torch.amax(logits, dim=-1, keepdim=True).detach()
    shifted = logits - row_max
    log_sum = torch.log(torch.sum(torch.exp(shifted), dim=-1))
    picked = torch.take_along_dim(shifted, targets.long()[..., None], dim=-1)[..., 0]
    return _as(torch.mean(log_sum - picked), inputs.dtype)
