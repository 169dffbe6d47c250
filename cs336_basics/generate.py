"""Autoregressive generation from a TransformerLM, one token at a time, with a key/value cache:
the prompt is run once (prefill), then each new token attends to the cached keys and values
of all earlier ones (Pope et al. 2022, section 2)."""

from collections.abc import Iterable, Iterator

import torch

from cs336_basics.nn.modules.transformer_lm import TransformerLM
from cs336_basics.sampling import sample_next_token


@torch.inference_mode()
def generate(
    model: TransformerLM,
    prompt_ids: Iterable[int],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    eos_token_ids: Iterable[int] = (),
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> Iterator[int]:
    """Yield new token ids as they are chosen. Stops after an end-of-sequence id (which is
    yielded), after max_new_tokens, or when the sequence fills the model's context_length.
    use_cache=False recomputes the whole sequence at every step (the reference the cache is
    tested against)."""
    if not max_new_tokens >= 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0 (0: greedy), got {temperature!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    ids = torch.tensor(list(prompt_ids), dtype=torch.long, device=model.token_embeddings.weight.device)[None]  # (1, n)
    if ids.shape[-1] == 0:
        raise ValueError("prompt_ids must hold at least one token")
    context = model.config.context_length
    if ids.shape[-1] > context:
        raise ValueError(f"the prompt has {ids.shape[-1]} tokens; context_length={context}")
    budget = min(max_new_tokens, context - ids.shape[-1])
    if budget <= 0:
        return
    # BEGIN SOLUTION
    eos = set(eos_token_ids)
    cache = model.new_kv_cache(ids.shape[-1] + budget) if use_cache else None
    logits = model(ids, kv_cache=cache)[:, -1]  # (1, vocab): the prefill
    for step in range(budget):
        token = sample_next_token(logits, temperature, top_p, generator)  # (1,)
        yield int(token)
        if int(token) in eos or step == budget - 1:
            return
        if use_cache:
            logits = model(token[:, None], kv_cache=cache)[:, -1]  # only the new token
        else:
            ids = torch.cat([ids, token[:, None]], dim=-1)  # (1, n + step + 1)
            logits = model(ids)[:, -1]
    # END SOLUTION
