def embedding(
    token_ids: Int[Tensor, "..."], weight: Float[Tensor, "vocab_size d_model"]
) -> Float[Tensor, "... d_model"]:
    """Row lookup: select rows of weight along dim 0 for the flattened ids, then restore the shape."""
    _checks.embedding(token_ids, weight)
    flat_ids = token_ids.reshape(-1).long()
    rows = torch.index_select(weight, 0, flat_ids)  # (n, d_model)
    return rows.reshape(*token_ids.shape, weight.shape[-1])
