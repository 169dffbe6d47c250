import functools


@functools.lru_cache(maxsize=32)
def _rope_tables_cpu(d_k: int, theta: float, max_seq_len: int) -> tuple[Tensor, Tensor]:
    inv_freq = 1.0 / (theta ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))
    angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float64), inv_freq)  # (max_seq_len, d_k/2)
    return torch.cos(angles), torch.sin(angles)


def rope_cos_sin(d_k: int, theta: float, max_seq_len: int, device=None) -> tuple[Tensor, Tensor]:
    """Cached float64 cos/sin tables (clones, so that no caller shares the cached tensors)."""
    _checks.rope_cos_sin(d_k, theta, max_seq_len)
    cos, sin = _rope_tables_cpu(d_k, float(theta), max_seq_len)
    return cos.clone().to(device), sin.clone().to(device)


def rope(
    x: Float[Tensor, "... seq d_k"],
    cos: Float[Tensor, "max_seq_len half_d_k"],
    sin: Float[Tensor, "max_seq_len half_d_k"],
    token_positions: Int[Tensor, "..."],
) -> Float[Tensor, "... seq d_k"]:
    """Rotate adjacent pairs: unbind the pair axis, rotate, stack it back."""
    _checks.rope(x, cos, sin, token_positions)
    dtype = _compute_dtype(x)
    c = _as(cos[token_positions], dtype)
    s = _as(sin[token_positions], dtype)
    even, odd = _as(x, dtype).reshape(*x.shape[:-1], x.shape[-1] // 2, 2).unbind(-1)
    rotated = torch.stack([even * c - odd * s, even * s + odd * c], dim=-1)
    return _as(rotated.reshape(*rotated.shape[:-2], -1), x.dtype)
