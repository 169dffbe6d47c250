"""Generation (cs336_basics/generation/generate.py) and the sampling it is built from
(cs336_basics/generation/sampling.py), graded under `generate`: its mistakes (positions and the KV
cache, temperature in the wrong place, the wrong nucleus, no renormalisation, a draw that is not the
token id, an end-of-sequence id that does not stop generation) and accepted variants."""

import torch

import cs336_basics.generation.generate as generation
import cs336_basics.generation.sampling as sampling
from cs336_basics.nn import functional as F

from . import mistake, variant

_reference_generate = generation.generate  # the right one, kept before any patching


# ---- decoding (replacements for generation.generate) ---------------------------------------------


GENERATION_DIVERGES = (
    "token ids that diverge where several known mistakes make them diverge (positions or the KV cache in "
    "generation, or attention or the model underneath): check that `pytest -k lm` and `-k mha` pass first"
)


def _prefill(model, prompt_ids, max_new_tokens):
    ids = torch.tensor(list(prompt_ids))[None]
    return ids, min(max_new_tokens, model.config.context_length - ids.shape[-1])


def _greedy_with_cache(model, prompt_ids, max_new_tokens, next_input):
    """Greedy decoding with a KV cache that feeds, after each chosen token, what
    next_input(step, token, prompt ids) returns: (token ids (1,), their positions)."""
    ids, budget = _prefill(model, prompt_ids, max_new_tokens)
    cache = model.new_kv_cache(ids.shape[-1] + budget)
    with torch.no_grad():
        logits = model(ids, kv_cache=cache)[:, -1]
        for step in range(budget):
            token = logits.argmax(-1)
            yield int(token)
            if step < budget - 1:
                fed, positions = next_input(step, token, ids)
                logits = model(fed[:, None], token_positions=positions, kv_cache=cache)[:, -1]


@mistake(
    "generate-positions_restart_with_cache",
    generation,
    "generate",
    diagnosis="generation feeding each new token at position 0 (not after the cached ones)",
    shows=GENERATION_DIVERGES,
)
def generate_positions_restart(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                               generator=None, use_cache=True):  # fmt: skip
    yield from _greedy_with_cache(
        model, prompt_ids, max_new_tokens, lambda step, token, ids: (token, torch.tensor([0]))
    )


@mistake(
    "generate-next_token_from_first_position",
    generation,
    "generate",
    diagnosis="generation choosing each token from the logits of the first position instead of the last",
    shows=GENERATION_DIVERGES,
)
def generate_from_first_position(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                                 generator=None, use_cache=True):  # fmt: skip
    ids, budget = _prefill(model, prompt_ids, max_new_tokens)
    with torch.no_grad():
        for _ in range(budget):
            ids = torch.cat([ids, model(ids)[:, 0].argmax(-1, keepdim=True)], -1)
            yield int(ids[0, -1])


@mistake(
    "generate-newest_token_alone",
    generation,
    "generate",
    diagnosis="generation running only the newest token without a KV cache (it attends to itself alone)",
    shows=GENERATION_DIVERGES,
)
def generate_cache_not_advanced(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                                generator=None, use_cache=True):  # fmt: skip
    ids, budget = _prefill(model, prompt_ids, max_new_tokens)
    with torch.no_grad():
        logits = model(ids)[:, -1]
        for step in range(budget):
            token = logits.argmax(-1)
            yield int(token)
            logits = model(token[:, None], token_positions=torch.tensor([ids.shape[-1] + step]))[:, -1]


@mistake(
    "generate-cached_position_off_by_one",
    generation,
    "generate",
    diagnosis="generation feeding each new token one position too far (cache length + 1, not the cache length)",
)
def generate_cached_position_off_by_one(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0,
                                        eos_token_ids=(), generator=None, use_cache=True):  # fmt: skip
    yield from _greedy_with_cache(
        model, prompt_ids, max_new_tokens, lambda step, token, ids: (token, torch.tensor([ids.shape[-1] + step + 1]))
    )


@mistake(
    "generate-previous_token_after_prefill",
    generation,
    "generate",
    diagnosis="generation feeding the model the token before the one it just chose (one step behind after the prompt)",
)
def generate_previous_token(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                            generator=None, use_cache=True):  # fmt: skip
    chosen = []

    def one_behind(step, token, ids):
        chosen.append(token)
        return (ids[:, -1] if step == 0 else chosen[-2]), torch.tensor([ids.shape[-1] + step])

    yield from _greedy_with_cache(model, prompt_ids, max_new_tokens, one_behind)


# ---- sampling (cs336_basics/generation/sampling.py) ----------------------------------------------


def _nucleus(probs, top_p, keep):
    """probs with the tokens outside keep(sorted_probs, top_p) zeroed (most likely first)."""
    if top_p == 1:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    sorted_probs = sorted_probs.masked_fill(~keep(sorted_probs, top_p), 0.0)
    return torch.zeros_like(probs).scatter(-1, order, sorted_probs)


def _renormalised(p):
    return p / p.sum(dim=-1, keepdim=True)


def _up(logits):
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


@mistake(
    "generate-temperature_on_probabilities",
    sampling,
    "next_token_distribution",
    diagnosis="sampling that divides the probabilities by the temperature after the softmax (renormalised, "
    "the temperature is lost) instead of the logits before it",
)
def temperature_after_softmax(logits, temperature, top_p=1.0):
    return sampling.top_p_filter(_renormalised(F.softmax(_up(logits), dim=-1) / temperature), top_p)


@mistake(
    "generate-temperature_multiplies_logits",
    sampling,
    "next_token_distribution",
    diagnosis="sampling that multiplies the logits by the temperature instead of dividing them",
)
def temperature_multiplies(logits, temperature, top_p=1.0):
    return sampling.top_p_filter(F.softmax(_up(logits) * temperature, dim=-1), top_p)


@mistake(
    "generate-top_p_before_temperature",
    sampling,
    "next_token_distribution",
    diagnosis="sampling that picks the top-p nucleus from softmax(logits) before the temperature is applied",
)
def top_p_before_temperature(logits, temperature, top_p=1.0):
    logits = _up(logits)
    kept = sampling.top_p_filter(F.softmax(logits, dim=-1), top_p) > 0
    return F.softmax((logits / temperature).masked_fill(~kept, float("-inf")), dim=-1)


@mistake(
    "generate-top_p_without_crossing_token",
    sampling,
    "top_p_filter",
    diagnosis="a top-p nucleus without the token that carries the sum past top_p (cumsum <= top_p kept, "
    "not the smallest set reaching top_p)",
)
def top_p_without_crossing_token(probs, top_p):
    def keep(sorted_probs, p):
        kept = sorted_probs.cumsum(dim=-1) <= p
        kept[..., 0] = True
        return kept

    return _renormalised(_nucleus(probs, top_p, keep))


@mistake(
    "generate-top_p_not_renormalised",
    sampling,
    "top_p_filter",
    diagnosis="a top-p nucleus whose probabilities are not renormalised to sum to 1",
)
def top_p_not_renormalised(probs, top_p):
    return _nucleus(probs, top_p, lambda s, p: s.cumsum(dim=-1) - s < p)


@mistake(
    "generate-top_p_in_vocabulary_order",
    sampling,
    "top_p_filter",
    diagnosis="a top-p nucleus summed in vocabulary order instead of from the most likely token down",
)
def top_p_in_vocabulary_order(probs, top_p):
    if top_p == 1:
        return probs
    return _renormalised(probs.masked_fill(probs.cumsum(dim=-1) - probs >= top_p, 0.0))


@mistake(
    "generate-draw_returns_sorted_index",
    sampling,
    "sample_next_token",
    diagnosis="sampling that draws from the probabilities sorted by size and returns the position in that "
    "order, not the token id",
)
def draw_returns_sorted_index(logits, temperature=0.0, top_p=1.0, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = sampling.next_token_distribution(logits, temperature, top_p).sort(dim=-1, descending=True).values
    return torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=generator).reshape(probs.shape[:-1])


@mistake(
    "generate-greedy_at_any_temperature",
    sampling,
    "sample_next_token",
    diagnosis="sampling that always takes the argmax (the temperature and top_p ignored)",
    shows="sampled token ids that differ from the expected draw (the distribution sampled from: temperature, "
    "top_p, or softmax and the model underneath)",
)
def greedy_at_any_temperature(logits, temperature=0.0, top_p=1.0, generator=None):
    return logits.argmax(dim=-1)


# ---- the end-of-sequence rule --------------------------------------------------------------------


def _stopping(eos_rule):
    """generation.generate with its end-of-sequence rule replaced: eos_rule(tokens, eos) -> the
    tokens up to where this wrong rule stops."""

    def generate(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(), generator=None,
                 use_cache=True):  # fmt: skip
        tokens = list(
            _reference_generate(model, prompt_ids, max_new_tokens, temperature, top_p, (), generator, use_cache)
        )
        yield from eos_rule(tokens, set(eos_token_ids))

    return generate


def _before_eos(tokens, eos):
    for token in tokens:
        if token in eos:
            return
        yield token


mistake(
    "generate-eos_ignored",
    generation,
    "generate",
    diagnosis="generation that goes on after an end-of-sequence id (eos_token_ids ignored)",
    shows="token ids that differ from the expected ones in a generation that meets an end-of-sequence id "
    "(stopping at it, yielding it, or the model underneath: check that `pytest -k lm` passes first)",
)(_stopping(lambda tokens, eos: tokens))


mistake(
    "generate-eos_not_yielded",
    generation,
    "generate",
    diagnosis="generation that stops at an end-of-sequence id without yielding it",
    shows="token ids that differ from the expected ones in a generation that meets an end-of-sequence id "
    "(stopping at it, yielding it, or the model underneath: check that `pytest -k lm` passes first)",
)(_stopping(_before_eos))


# ---- correct, written differently ----------------------------------------------------------------


@variant("generate-top_p_by_threshold", sampling, "top_p_filter")
def top_p_by_threshold(probs, top_p):
    # the nucleus as a threshold: keep every token at least as likely as the one that carries the
    # sum of the more likely ones past top_p (the same set when no two probabilities are equal)
    if top_p == 1:
        return probs
    sorted_probs = probs.sort(dim=-1, descending=True).values
    last = ((sorted_probs.cumsum(dim=-1) - sorted_probs) < top_p).sum(dim=-1, keepdim=True) - 1
    kept = probs.masked_fill(probs < sorted_probs.gather(-1, last), 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


@variant("generate-distribution_through_logsumexp", sampling, "next_token_distribution")
def distribution_through_log_softmax(logits, temperature, top_p=1.0):
    scaled = _up(logits) / temperature
    return sampling.top_p_filter((scaled - scaled.logsumexp(dim=-1, keepdim=True)).exp(), top_p)


@variant("generate-without_cache", generation, "generate")
def generate_recomputing_everything(*args, **kwargs):
    # no KV cache: the whole sequence runs again at every step
    return _reference_generate(*args, **{**kwargs, "use_cache": False})
