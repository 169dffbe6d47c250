def _sparse_softmax_last(scores):
    idx = torch.ones_like(scores, dtype=torch.bool).nonzero().T
    sp = torch.sparse_coo_tensor(idx, scores.reshape(-1), scores.shape)
    return torch.sparse.softmax(sp, dim=scores.dim() - 1).to_dense()


def scaled_dot_product_attention(Q, K, V, mask=None):
    _checks.attention(Q, K, V, mask)
    d_k = Q.shape[-1]
    scores = _upcast(_broadcast_matmul(Q * (1.0 / math.sqrt(d_k)), K.mT))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    dead = (scores == float("-inf")).all(dim=-1, keepdim=True)
    scores = torch.where(dead, torch.zeros_like(scores), scores)
    probs = torch.where(dead, torch.zeros_like(scores), _sparse_softmax_last(scores))
    return _broadcast_matmul(_as(probs, V.dtype), V)
