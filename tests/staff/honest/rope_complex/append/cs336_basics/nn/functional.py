def rope(
    x: Float[Tensor, "... seq d_k"],
    cos: Float[Tensor, "max_seq_len half_d_k"],
    sin: Float[Tensor, "max_seq_len half_d_k"],
    token_positions: Int[Tensor, "..."],
) -> Float[Tensor, "... seq d_k"]:
    """(x[2k] + i x[2k+1]) * (cos + i sin): each adjacent pair rotated as a complex number."""
    _checks.rope(x, cos, sin, token_positions)
    dtype = _compute_dtype(x)
    rotation = torch.complex(_as(cos[token_positions], dtype), _as(sin[token_positions], dtype))  # (..., seq, d_k/2)
    z = torch.view_as_complex(_as(x, dtype).unflatten(-1, (-1, 2)).contiguous())  # (..., seq, d_k/2)
    return _as(torch.view_as_real(z * rotation).flatten(-2), x.dtype)
