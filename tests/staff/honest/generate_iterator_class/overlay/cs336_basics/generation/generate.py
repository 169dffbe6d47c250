"""Autoregressive generation from a TransformerLM, one token at a time, with a key/value cache:
the prompt is run once (prefill), then each new token attends to the cached keys and values
of all earlier ones (Pope et al. 2022, section 2)."""

from collections.abc import Iterable, Iterator, Sequence

import torch

from cs336_basics.generation.sampling import sample_next_token
from cs336_basics.nn.modules.transformer_lm import TransformerLM


def _check_arguments(max_new_tokens: int, temperature: float, top_p: float) -> None:
    if not max_new_tokens >= 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0 (0: greedy), got {temperature!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")


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
    _check_arguments(max_new_tokens, temperature, top_p)
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
    yield from _Generation(model, ids, budget, temperature, top_p, set(eos_token_ids), generator, use_cache)
    # END SOLUTION


class _Generation:
    """One generation in progress: each __next__ picks a token, then feeds it to the model."""

    __slots__ = ("model", "ids", "left", "temperature", "top_p", "eos", "generator", "cache", "logits", "done")

    def __init__(self, model, ids, budget, temperature, top_p, eos, generator, use_cache):
        self.model, self.ids, self.left = model, ids, budget
        self.temperature, self.top_p, self.eos, self.generator = temperature, top_p, eos, generator
        self.cache = model.new_kv_cache(ids.shape[-1] + budget) if use_cache else None
        self.logits = model(ids, kv_cache=self.cache)[:, -1]  # the prefill
        self.done = False

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if self.done:
            raise StopIteration
        token = sample_next_token(self.logits, self.temperature, self.top_p, self.generator)  # (1,)
        self.left -= 1
        new_id = int(token)
        if new_id in self.eos or self.left == 0:
            self.done = True
        elif self.cache is not None:
            self.logits = self.model(token[:, None], kv_cache=self.cache)[:, -1]
        else:
            self.ids = torch.cat([self.ids, token[:, None]], dim=-1)
            self.logits = self.model(self.ids)[:, -1]
        return new_id


@torch.inference_mode()
def _check_batch(prompts: list[list[int]], generators, context_length: int) -> None:
    """ValueError unless there is a prompt, each holds 1 to context_length tokens, and `generators`
    (if given) holds one per prompt."""
    if not prompts:
        raise ValueError("prompts must hold at least one prompt")
    if generators is not None and len(generators) != len(prompts):
        raise ValueError(f"generators must hold one generator per prompt ({len(prompts)}), got {len(generators)}")
    for i, p in enumerate(prompts):
        if not p:
            raise ValueError(f"prompts[{i}] must hold at least one token")
        if len(p) > context_length:
            raise ValueError(f"prompts[{i}] has {len(p)} tokens; context_length={context_length}")


def generate_batch(
    model: TransformerLM,
    prompts: Sequence[Iterable[int]],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    eos_token_ids: Iterable[int] = (),
    generators: Sequence[torch.Generator | None] | None = None,
) -> list[list[int]]:
    """The new token ids of each prompt, those generate() gives for it alone (with generators[i]
    as its generator): the prompts run as one batch, left-padded to the longest, with an
    attention_mask that hides the padding and token_positions counting each prompt's own tokens
    (Hugging Face's batched generation). Each sequence stops at its own end-of-sequence id,
    max_new_tokens or context_length, and then leaves the batch (its cache rows are dropped).
    Sampling draws each sequence's token from its own generator, as generate() would."""
    prompts = [list(p) for p in prompts]
    _check_batch(prompts, generators, model.config.context_length)
    _check_arguments(max_new_tokens, temperature, top_p)
    generators = list(generators) if generators is not None else [None] * len(prompts)
    budgets = [min(max_new_tokens, model.config.context_length - len(p)) for p in prompts]
    out: list[list[int]] = [[] for _ in prompts]
    # BEGIN SOLUTION
    live = [i for i, b in enumerate(budgets) if b > 0]  # the prompts still generating, in batch order
    if not live:
        return out
    device, eos = model.token_embeddings.weight.device, set(eos_token_ids)
    width = max(len(prompts[i]) for i in live)
    ids = torch.zeros(len(live), width, dtype=torch.long)  # left padding (id 0, never attended)
    real = torch.zeros(len(live), width, dtype=torch.bool)  # (batch, keys): False at padding
    for row, i in enumerate(live):
        ids[row, width - len(prompts[i]) :] = torch.tensor(prompts[i])
        real[row, width - len(prompts[i]) :] = True
    ids, real = ids.to(device), real.to(device)
    positions = (real.cumsum(-1) - 1).clamp(min=0)  # (batch, width): each prompt's own 0, 1, ...
    cache = model.new_kv_cache(width + max(budgets[i] for i in live))
    logits = model(ids, positions, cache, real)[:, -1]  # (batch, vocab): the prefill
    positions = positions[:, -1:]  # (batch, 1): the last position of each sequence
    while True:
        if temperature == 0:
            tokens = sample_next_token(logits)  # (batch,): argmax is row by row
        else:
            tokens = torch.cat([sample_next_token(logits[row : row + 1], temperature, top_p, generators[i])
                                for row, i in enumerate(live)])  # fmt: skip
        keep = []
        for row, (i, token) in enumerate(zip(live, tokens.tolist(), strict=True)):
            out[i].append(token)
            if token not in eos and len(out[i]) < budgets[i]:
                keep.append(row)
        if not keep:
            return out
        if len(keep) < len(live):  # finished sequences leave the batch
            rows = torch.tensor(keep, device=device)
            for layer_cache in cache:
                layer_cache.keep_rows(rows)
            tokens, real, positions = tokens[rows], real[rows], positions[rows]
            live = [live[row] for row in keep]
        real = torch.cat([real, real.new_ones(len(live), 1)], dim=-1)  # (batch, keys + 1)
        positions = positions + 1
        logits = model(tokens[:, None], positions, cache, real)[:, -1]  # only the new tokens
    # END SOLUTION
