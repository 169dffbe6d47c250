def scaled_dot_product_attention(
    Q: Float[Tensor, "... queries d_k"],
    K: Float[Tensor, "... keys d_k"],
    V: Float[Tensor, "... keys d_v"],
    mask: Bool[Tensor, "..."] | None = None,
) -> Float[Tensor, "... queries d_v"]:
    """softmax(Q K^T / sqrt(d_k)) V with einops einsums; masked scores set to -inf with torch.where."""
    _checks.attention(Q, K, V, mask)
    scores = einsum(Q, K, "... q d, ... k d -> ... q k") / math.sqrt(Q.shape[-1])
    scores = _upcast(scores)
    if mask is not None:
        scores = torch.where(mask, scores, torch.full((), float("-inf"), dtype=scores.dtype, device=scores.device))
    probs = _as(softmax(scores, dim=-1), V.dtype)
    return einsum(probs, V, "... q k, ... k d -> ... q d")
