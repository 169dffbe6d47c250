def scaled_dot_product_attention(Q, K, V, mask=None):
    _checks.attention(Q, K, V, mask)
    q, k, v = _upcast(Q), _upcast(K), _upcast(V)
    out = next(map(torch.nn.functional.scaled_dot_product_attention, [q], [k], [v], [mask]))
    return _as(out, V.dtype)
