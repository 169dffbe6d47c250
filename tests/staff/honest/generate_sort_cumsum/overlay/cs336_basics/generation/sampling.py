"""Choosing the next token from logits: greedy, temperature, and nucleus (top-p) sampling
(Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration", section 3.1).

What students write: the nucleus (`top_p_filter`), the distribution a token is drawn from
(`next_token_distribution`: temperature divides the logits, before the softmax) and the draw
(`sample_next_token`). The draw is specified to the call so that a seeded run gives the same
token ids as the reference: torch.multinomial(probs.reshape(-1, vocab), 1, generator=generator),
on the probabilities in vocabulary order (not sorted).
"""

import torch
from jaxtyping import Float, Int
from torch import Tensor

from cs336_basics.nn import functional as F


def top_p_filter(probs: Float[Tensor, "... vocab"], top_p: float) -> Float[Tensor, "... vocab"]:
    """Keep the smallest set of most likely tokens whose probabilities sum to >= top_p (always
    at least the most likely one), zero the rest, renormalise to sum 1; top_p = 1 keeps all."""
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    # BEGIN SOLUTION
    if top_p == 1:
        return probs
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # mass of the more likely tokens
    keep = mass_before < top_p  # the first token is always kept (0 < top_p)
    filtered = sorted_probs * keep
    inverse = torch.argsort(order, dim=-1)  # position of each vocabulary entry in the sorted order
    kept = torch.gather(filtered, -1, inverse)  # back in vocabulary order
    return kept / kept.sum(dim=-1, keepdim=True)
    # END SOLUTION


def next_token_distribution(
    logits: Float[Tensor, "... vocab"], temperature: float, top_p: float = 1.0
) -> Float[Tensor, "... vocab"]:
    """top_p_filter(softmax(logits / temperature), top_p) for temperature > 0, computed in
    float32 (float64 logits in float64): the temperature scales the logits, not the probabilities."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 (0 is greedy: no distribution), got {temperature!r}")
    # BEGIN SOLUTION
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return top_p_filter(F.softmax(logits / temperature, dim=-1), top_p)
    # END SOLUTION


def sample_next_token(
    logits: Float[Tensor, "... vocab"],
    temperature: float = 0.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Int[Tensor, "..."]:
    """temperature 0: argmax (greedy). Otherwise one draw per row from
    next_token_distribution(logits, temperature, top_p), made with
    torch.multinomial(probs.reshape(-1, vocab), 1, generator=generator) (seeded: reproducible)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    # BEGIN SOLUTION
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = next_token_distribution(logits, temperature, top_p)
    flat = probs.reshape(-1, probs.shape[-1])  # (batch, vocab)
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
    # END SOLUTION
