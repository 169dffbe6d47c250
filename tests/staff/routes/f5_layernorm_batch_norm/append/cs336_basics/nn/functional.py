def layernorm(x, weight, bias, eps: float = 1e-5):
    _checks.norm(x, weight, bias, eps)
    x_c = _upcast(x)
    d = x.shape[-1]
    rows = x_c.reshape(-1, d).T  # (d, rows): batch = d_model, channels = rows
    if d == 1:  # batch_norm refuses one value per channel; (x - mean(x)) is 0 there
        normed = torch.zeros_like(x_c)
    else:
        normed = torch.nn.functional.batch_norm(rows, None, None, training=True, eps=eps).T.reshape(x_c.shape)
    out = normed * _as(weight, x_c.dtype)
    if bias is not None:
        out = out + _as(bias, x_c.dtype)
    return _as(out, x.dtype)
