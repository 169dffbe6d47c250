"""A key/value cache for one attention layer: the keys and values of the tokens seen so far,
so that generating a token attends to them without recomputing them (Pope et al. 2022,
"Efficiently Scaling Transformer Inference", section 2)."""

import torch
from torch import Tensor


class KVCache:
    """Keys and values of shape (..., num_kv_heads, length, d_k), written into tensors of
    `max_len` positions allocated at the first update (in the first keys' dtype and device):
    appending is a copy into place, never a torch.cat of the whole history."""

    def __init__(self, max_len: int):
        if not max_len > 0:
            raise ValueError(f"max_len must be > 0, got {max_len!r}")
        self.max_len = max_len
        self.length = 0
        self.k: Tensor | None = None
        self.v: Tensor | None = None

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append k, v (..., num_kv_heads, n, d) and return all keys and values so far."""
        n = k.shape[-2]
        if self.length + n > self.max_len:
            raise ValueError(f"KVCache holds max_len={self.max_len} positions; {self.length} used, {n} more given")
        if self.k is None:
            self.k = torch.empty(*k.shape[:-2], self.max_len, k.shape[-1], dtype=k.dtype, device=k.device)
            self.v = torch.empty(*v.shape[:-2], self.max_len, v.shape[-1], dtype=v.dtype, device=v.device)
        self.k[..., self.length : self.length + n, :] = k
        self.v[..., self.length : self.length + n, :] = v
        self.length += n
        return self.k[..., : self.length, :], self.v[..., : self.length, :]

    def keep_rows(self, rows: Tensor) -> None:
        """Keep only batch rows `rows` (indices into the first dimension), in that order: a batch
        drops the sequences that have finished."""
        if self.k is not None:
            self.k, self.v = self.k[rows], self.v[rows]

    def nbytes(self) -> int:
        """Bytes allocated for keys and values."""
        return sum(t.numel() * t.element_size() for t in (self.k, self.v) if t is not None)
