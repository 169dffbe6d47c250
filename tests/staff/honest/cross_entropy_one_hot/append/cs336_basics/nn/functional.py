def cross_entropy(inputs: Float[Tensor, "... vocab_size"], targets: Int[Tensor, "..."]) -> Float[Tensor, ""]:
    """mean(log sum exp(x - m) - sum(onehot * (x - m)))."""
    _checks.cross_entropy(inputs, targets)
    logits = _upcast(inputs)
    shifted = logits - logits.detach().amax(dim=-1, keepdim=True)
    log_sum = shifted.exp().sum(dim=-1).log()
    onehot = torch.nn.functional.one_hot(targets.long(), num_classes=logits.shape[-1]).to(logits.dtype)
    picked = (shifted * onehot).sum(dim=-1)
    return _as((log_sum - picked).mean(), inputs.dtype)
