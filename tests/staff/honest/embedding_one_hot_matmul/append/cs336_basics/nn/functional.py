def embedding(
    token_ids: Int[Tensor, "..."], weight: Float[Tensor, "vocab_size d_model"]
) -> Float[Tensor, "... d_model"]:
    """one_hot(ids) @ weight: selects weight's rows exactly."""
    _checks.embedding(token_ids, weight)
    onehot = torch.nn.functional.one_hot(token_ids.long(), num_classes=weight.shape[0]).to(weight.dtype)
    return onehot @ weight
