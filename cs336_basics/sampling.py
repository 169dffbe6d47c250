"""Choosing the next token from logits: greedy, temperature, and nucleus (top-p) sampling
(Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration", section 3.1)."""

import torch
from jaxtyping import Float, Int
from torch import Tensor

from cs336_basics.nn import functional as F


def top_p_filter(probs: Float[Tensor, "... vocab"], top_p: float) -> Float[Tensor, "... vocab"]:
    """Keep the smallest set of most likely tokens whose probabilities sum to >= top_p (always
    at least the most likely one), zero the rest, renormalise."""
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if top_p == 1:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass of the more likely tokens
    sorted_probs = sorted_probs.masked_fill(before >= top_p, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return kept / kept.sum(dim=-1, keepdim=True)


def sample_next_token(
    logits: Float[Tensor, "... vocab"],
    temperature: float = 0.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Int[Tensor, "..."]:
    """temperature 0: argmax (greedy). Otherwise draw from top_p_filter(softmax(logits / T))
    with `generator` (seeded: reproducible). Computed in float32."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = top_p_filter(F.softmax(logits.float() / temperature, dim=-1), top_p)
    flat = probs.reshape(-1, probs.shape[-1])  # (batch, vocab)
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
