"""Generation (cs336_basics/generation/generate.py) and the sampling it is built from
(cs336_basics/generation/sampling.py), graded under `generate`: the builders of their inputs, then
their cases and what they grade of the public tests, then their mistakes (positions and the KV
cache, temperature in the wrong place, the wrong nucleus, no renormalisation, a draw that is not
the token id, an end-of-sequence id that does not stop generation) and accepted variants."""

from functools import partial

import torch

import cs336_basics.generation.generate as generation
import cs336_basics.generation.sampling as sampling
from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.case import EXACT_INT64, F64, Case
from cs336_basics.staff.cases.draw import Make, edited, randint
from cs336_basics.staff.cases.model import lm_config, lm_weights
from cs336_basics.staff.mistakes import mistake, variant
from cs336_basics.staff.reference import expected_output


def generate_batch_case(prompt_lengths: list[int], max_new_tokens: int, vocab_size: int, context_length: int,
                        d_model: int, num_layers: int, num_heads: int, d_ff: int, temperature: float,
                        top_p: float = 1.0, rope_theta: float = 10000.0) -> Make:  # fmt: skip
    """Prompts of different lengths (zero-padded on the right into one (batch, width) tensor) for
    adapters.run_generate_batch, sampled with a drawn seed."""

    def make(rng):
        w = lm_weights(rng, vocab_size, d_model, num_layers, num_heads, num_heads, d_ff, False)
        ids = torch.zeros(len(prompt_lengths), max(prompt_lengths), dtype=torch.long)
        for row, n in zip(ids, prompt_lengths, strict=True):
            row[:n] = randint(rng, 0, vocab_size, (n,))
        return dict(
            **lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta),
            weights=w,
            prompt_ids=ids,
            prompt_lengths=torch.tensor(prompt_lengths),
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=int(rng.integers(2**31)),
        )

    return make


def generate_case(
    prompt_len: int,
    max_new_tokens: int,
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float = 10000.0,
    num_kv_heads: int | None = None,
    tie: bool = False,
    temperature: float | None = None,
    top_p: float | None = None,
) -> Make:
    """Generation from small random weights: the token ids are the output. Greedy unless a
    temperature is given, then sampled with a drawn seed (and top_p, if given)."""

    def make(rng):
        w = lm_weights(rng, vocab_size, d_model, num_layers, num_heads, num_kv_heads or num_heads, d_ff, tie)
        kw = dict(
            **lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta),
            weights=w,
            prompt_ids=randint(rng, 0, vocab_size, (prompt_len,)),
            max_new_tokens=max_new_tokens,
        )
        if temperature is not None:
            kw.update(temperature=temperature, seed=int(rng.integers(2**31)))
        if top_p is not None:
            kw.update(top_p=top_p)
        return kw

    return make


def sampling_case(batch: tuple[int, ...], vocab_size: int, std: float, what: str, **scalars) -> Make:
    """Logits ~ N(0, std^2) over vocab_size tokens, for what = "filter" (their softmax, as probs,
    for run_top_p_filter), "distribution" (run_next_token_distribution) or "draw"
    (run_sample_next_token, with a drawn seed). scalars: temperature, top_p."""

    def make(rng):
        logits = torch.from_numpy(rng.standard_normal((*batch, vocab_size)) * std)  # float64
        if what == "filter":
            return dict(probs=torch.softmax(logits, dim=-1).float(), **scalars)
        kw = dict(logits=logits.float(), **scalars)
        if what == "draw":
            kw["seed"] = int(rng.integers(2**31))
        return kw

    return make


def _eos_is_the_third_token(kw: dict) -> None:
    # the id generation chooses third: it must stop right after it (and yield it)
    kw["eos_token_id"] = int(expected_output("run_generate", kw)[2])


def _eos_is_row_0_s_second_token(kw: dict) -> None:
    # the id the first prompt's generation chooses second: that row stops after it, the others go on
    kw["eos_token_id"] = int(expected_output("run_generate_batch", kw)[0, 1])


generate = partial(Case, component="generate", adapter="run_generate", **EXACT_INT64)
generate_batch = partial(Case, component="generate", adapter="run_generate_batch", **EXACT_INT64)
top_p_filter = partial(Case, component="generate", adapter="run_top_p_filter")
next_token_distribution = partial(Case, component="generate", adapter="run_next_token_distribution")
sample_next_token = partial(Case, component="generate", adapter="run_sample_next_token", **EXACT_INT64)

CASES = [
    # generate: greedy token ids (exact) from a 5-token prompt; a prompt that leaves room for
    # only 4 of the 10 tokens asked for (generation stops at context_length)
    generate("generate_greedy", seed=38, make=generate_case(5, 12, 64, 32, 32, 2, 4, 64)),
    generate(
        "generate_until_context_full",
        seed=39,
        make=generate_case(12, 10, 64, 16, 32, 2, 4, 64, num_kv_heads=2, tie=True),
    ),
    # use_cache=False recomputes the whole sequence at every step: the same tokens
    generate(
        "generate_greedy_without_cache",
        seed=204,
        make=edited(generate_case(5, 8, 64, 32, 32, 2, 4, 64), lambda kw: kw.update(use_cache=False)),
    ),
    # prompts of different lengths in one batch (left padding masked, each prompt's own positions,
    # each row its own generator): each row's tokens are those of its prompt alone
    generate_batch(
        "generate_sampled_in_a_batch",
        seed=205,
        make=generate_batch_case([5, 2, 4], 6, 48, 32, 32, 2, 4, 64, temperature=1.5, top_p=0.8, rope_theta=100.0),
    ),
    generate_batch(
        "generate_stops_at_eos_in_a_batch",
        seed=206,
        make=edited(
            generate_batch_case([3, 6], 5, 40, 32, 32, 2, 4, 64, temperature=0.0), _eos_is_row_0_s_second_token
        ),
    ),
    # sampled: the first row stops after its second token and leaves the batch; each row left
    # still draws from its own prompt's generator, not the one at its new index
    generate_batch(
        "generate_sampled_first_row_stops_early",
        seed=215,
        make=edited(
            generate_batch_case([3, 6, 4], 6, 40, 32, 32, 2, 4, 64, temperature=1.2), _eos_is_row_0_s_second_token
        ),
    ),
    # a long prompt fills the context after two tokens while the short one goes on: each row's
    # positions are its own, so the short row's never reach the batch's width
    generate_batch(
        "generate_batch_long_prompt_fills_the_context",
        seed=212,
        make=generate_batch_case([14, 3], 10, 48, 16, 32, 2, 4, 64, temperature=0.0),
    ),
    generate("generate_f64", seed=127, make=generate_case(4, 6, 48, 24, 48, 1, 3, 96, rope_theta=500000.0), dtype=F64),
    # what sampling.py computes, graded on its own: the nucleus of probabilities (top-p), the
    # distribution a token is drawn from (temperature on the logits, then top-p), seeded draws (ids
    # compared as ids: the draw is torch.multinomial on the distribution in vocabulary order); a whole
    # sampled generation; and generation that stops after an end-of-sequence id
    top_p_filter(
        "generate_top_p_filter", seed=140, make=sampling_case((6,), 40, 2.0, "filter", top_p=0.8), floor=1.3e-7
    ),
    top_p_filter(
        "generate_top_p_filter_4d_f64",
        seed=141,
        make=sampling_case((2, 3, 4), 16, 1.5, "filter", top_p=0.5),
        floor=0.0,
        dtype=F64,
    ),
    # witness: a temperature of 0.6 on the logits sharpens the distribution; applied to the
    # probabilities after the softmax (and renormalised) it changes nothing
    next_token_distribution(
        "generate_temperature_distribution",
        seed=142,
        make=sampling_case((5,), 30, 2.0, "distribution", temperature=0.6, top_p=1.0),
        floor=2.4e-7,
    ),
    next_token_distribution(
        "generate_temperature_top_p_distribution_f64",
        seed=143,
        make=sampling_case((2, 4), 25, 1.0, "distribution", temperature=1.7, top_p=0.9),
        floor=2.5e-16,
        dtype=F64,
    ),
    sample_next_token(
        "generate_sampled_ids", seed=144, make=sampling_case((64,), 20, 2.0, "draw", temperature=0.8, top_p=0.9)
    ),
    sample_next_token(
        "generate_sampled_ids_4d_f64",
        seed=145,
        make=sampling_case((4, 4, 4), 12, 1.0, "draw", temperature=1.5, top_p=1.0),
        dtype=F64,
    ),
    generate("generate_sampled", seed=146, make=generate_case(4, 12, 32, 32, 32, 2, 4, 64, temperature=1.0, top_p=0.9)),
    # witness (tests/staff/test_argument_flow.py): generation that ignores `temperature` (greedy)
    # or `seed` fails here; generate_sampled's nucleus (top_p 0.9 of a peaked distribution) is
    # the greedy token at every step, so it cannot tell
    generate(
        "generate_sampled_hot",
        seed=159,
        make=generate_case(4, 12, 32, 32, 32, 2, 4, 64, temperature=2.0, top_p=1.0),
    ),
    generate(
        "generate_stops_at_eos",
        seed=147,
        make=edited(generate_case(5, 10, 64, 32, 32, 2, 4, 64), _eos_is_the_third_token),
    ),
    # hidden: a one-token prompt, multi-query, tied; 3 layers and an odd vocabulary
    generate(
        "generate_one_token_prompt",
        hidden=True,
        seed=1151,
        make=generate_case(1, 9, 40, 24, 32, 2, 4, 64, num_kv_heads=1, tie=True),
    ),
    generate_batch(
        "generate_batch_three_rows_one_fills_the_context",
        hidden=True,
        seed=1206,
        make=generate_batch_case([2, 19, 5], 9, 40, 20, 24, 2, 3, 48, temperature=0.0, rope_theta=500.0),
    ),
    generate("generate_three_layers", hidden=True, seed=1152, make=generate_case(4, 7, 53, 16, 48, 3, 3, 80)),
    # sampled (temperature and top-p, seeded) from a tied grouped-query model, stopping after the
    # third id it draws
    generate(
        "generate_sampled_stops_at_eos",
        hidden=True,
        seed=1153,
        make=edited(
            generate_case(3, 9, 40, 24, 32, 2, 4, 64, num_kv_heads=2, tie=True, temperature=0.7, top_p=0.8),
            _eos_is_the_third_token,
        ),
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "generate": {
        "test_generate_matches_fixture": ("generate_greedy", "generate_until_context_full", "generate_f64"),
        "test_generate_greedy_cached_equals_recomputed": (
            "generate_greedy",
            "generate_three_layers",
            "generate_greedy_without_cache",
        ),
        "test_generate_batch_greedy_equals_each_prompt_alone": (
            "generate_stops_at_eos_in_a_batch",
            "generate_batch_long_prompt_fills_the_context",
        ),
        "test_generate_top_p_of_one_keeps_every_token": ("generate_sampled_hot",),
        "test_generate_zero_temperature_is_argmax_over_the_last_dimension": (
            "generate_greedy",
            "generate_stops_at_eos_in_a_batch",
        ),
        "test_generate_batch_seeded_sampling_equals_each_prompt_alone": ("generate_sampled_in_a_batch",),
        "test_generate_batch_each_sequence_stops_at_its_own_eos": (
            "generate_stops_at_eos_in_a_batch",
            "generate_sampled_first_row_stops_early",
        ),
        "test_generate_batch_float32_greedy_equals_each_prompt_alone": ("generate_stops_at_eos_in_a_batch",),
        "test_generate_seeded_sampling_cached_equals_recomputed": ("generate_sampled", "generate_sampled_ids"),
        "test_generate_stops_at_an_end_of_sequence_id": ("generate_stops_at_eos", "generate_sampled_stops_at_eos"),
        "test_generate_stops_when_the_context_is_full": ("generate_until_context_full",),
        "test_generate_zero_temperature_is_argmax": ("generate_greedy", "generate_one_token_prompt"),
        "test_generate_top_p_keeps_the_smallest_nucleus": ("generate_top_p_filter", "generate_top_p_filter_4d_f64"),
        "test_generate_top_p_keeps_a_wide_nucleus_as_sorting_the_whole_row_does": ("generate_top_p_filter_4d_f64",),
        "test_generate_sampling_draws_only_from_the_nucleus": ("generate_temperature_top_p_distribution_f64",),
        "test_generate_top_p_keeps_the_smallest_set_reaching_p": (
            "generate_top_p_filter",
            "generate_top_p_filter_4d_f64",
        ),
        "test_generate_top_p_renormalises_the_kept_probabilities": ("generate_top_p_filter",),
        "test_generate_zero_temperature_picks_the_argmax": ("generate_greedy", "generate_f64"),
        "test_generate_temperature_divides_the_logits": ("generate_temperature_distribution",),
        "test_generate_top_p_applies_after_the_temperature": ("generate_temperature_top_p_distribution_f64",),
        "test_generate_draws_from_the_whole_nucleus_and_nothing_else": (
            "generate_sampled_ids",
            "generate_sampled_ids_4d_f64",
        ),
        "test_generate_returns_max_new_tokens_new_ids": ("generate_greedy", "generate_f64"),
        "test_generate_greedy_tokens_are_the_argmax_of_the_whole_sequence": ("generate_greedy", "generate_f64"),
        "test_generate_seeded_draws_follow_the_whole_sequence": ("generate_sampled", "generate_sampled_hot"),
        "test_generate_stops_after_an_end_of_sequence_id_and_yields_it": (
            "generate_stops_at_eos",
            "generate_sampled_stops_at_eos",
        ),
        "test_generate_yields_at_most_what_the_context_holds": ("generate_until_context_full",),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_generate_batch_rejects_an_empty_prompt": "the given argument check of generate_batch",
    "test_generate_distribution_of_half_type_logits_is_computed_in_float32": (
        "a graded case's tolerance follows its input's dtype: on bfloat16 logits it cannot tell float32 arithmetic "
        "from bfloat16's"
    ),
    "test_generate_takes_end_of_sequence_ids_from_any_iterable": (
        "run_generate passes the end-of-sequence ids as a tuple; reading an iterator once is the given signature's "
        "promise"
    ),
    "test_generate_batch_takes_end_of_sequence_ids_from_any_iterable": (
        "run_generate_batch passes the end-of-sequence ids as a tuple; reading an iterator once is the given "
        "signature's promise"
    ),
    "test_generate_batch_gives_a_full_prompt_nothing_and_a_nearly_full_one_a_token": (
        "no graded batch has a prompt that fills the context (generate_until_context_full grades the limit for one "
        "prompt)"
    ),
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


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
