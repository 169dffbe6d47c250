def cross_entropy(inputs, targets):
    _checks.cross_entropy(inputs, targets)
    logits = _upcast(inputs)
    lse = logits.logcumsumexp(dim=-1)[..., -1]
    target_logit = logits.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    return _as((lse - target_logit).mean(), inputs.dtype)
