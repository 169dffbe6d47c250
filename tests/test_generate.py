"""Generation: the key/value cache gives the same tokens as recomputing the whole prefix at
every step (greedy and seeded sampling); stopping rules; nucleus filtering."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.generation.generate import generate, generate_batch
from cs336_basics.generation.sampling import next_token_distribution, sample_next_token, top_p_filter
from cs336_basics.nn import TransformerLM, TransformerLMConfig

from . import adapters, oracles

CTX = 24


@pytest.mark.parametrize("case", fixture_names("generate"))
def test_generate_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return TransformerLM(TransformerLMConfig(61, CTX, 32, 2, 4, 64, 500.0, num_kv_heads=2)).eval()


PROMPT = [5, 17, 3, 42, 8]


def run(model, **kw):
    kw.setdefault("max_new_tokens", 8)
    return list(generate(model, PROMPT, **kw))


def test_generate_greedy_cached_equals_recomputed(model):
    cached = run(model)
    assert cached == run(model, use_cache=False) and len(cached) == 8


def test_generate_seeded_sampling_cached_equals_recomputed(model):
    kw = dict(temperature=0.9, top_p=0.8)
    cached = run(model, generator=torch.Generator().manual_seed(1), **kw)
    assert cached == run(model, generator=torch.Generator().manual_seed(1), use_cache=False, **kw)
    assert cached != run(model, generator=torch.Generator().manual_seed(2), **kw)  # the seed matters


def test_generate_stops_at_an_end_of_sequence_id(model):
    tokens = run(model)
    eos = tokens[3]
    first = tokens.index(eos)
    assert run(model, eos_token_ids=[eos]) == tokens[: first + 1]


def test_generate_stops_when_the_context_is_full(model):
    tokens = run(model, max_new_tokens=100)
    assert len(tokens) == CTX - len(PROMPT)


def test_generate_zero_temperature_is_argmax():
    logits = torch.tensor([[0.1, 2.0, -1.0, 1.9]])
    assert sample_next_token(logits).tolist() == [1]


def test_generate_zero_temperature_is_argmax_over_the_last_dimension():
    logits = torch.tensor([[[0.1, 2.0, -1.0, 1.9]], [[3.0, 0.0, 0.5, 0.2]]])  # (2, 1, vocab)
    assert sample_next_token(logits).tolist() == [[1], [0]]
    assert sample_next_token(logits[0, 0]).tolist() == 1  # one row: (vocab,) -> a scalar


def test_generate_distribution_of_half_type_logits_is_computed_in_float32():
    logits = torch.randn(2, 50, generator=torch.Generator().manual_seed(0)).bfloat16()
    probs = next_token_distribution(logits, 0.7)
    assert probs.dtype == torch.float32
    assert torch.equal(probs, next_token_distribution(logits.float(), 0.7))  # bf16 -> float32 is exact


def test_generate_top_p_keeps_the_smallest_nucleus():
    probs = torch.tensor([0.5, 0.1, 0.3, 0.1])
    assert torch.allclose(top_p_filter(probs, 0.75), torch.tensor([0.625, 0.0, 0.375, 0.0]))
    assert torch.allclose(top_p_filter(probs, 0.5), torch.tensor([1.0, 0.0, 0.0, 0.0]))


def test_generate_top_p_of_one_keeps_every_token():
    probs = torch.tensor([0.5, 0.5, 1e-9])  # the first two already sum to 1 in float32: the third is kept too
    assert torch.equal(top_p_filter(probs, 1.0), probs)


@pytest.mark.parametrize("vocab, scale", [(1000, 0.5), (5000, 2.0)])
def test_generate_top_p_keeps_a_wide_nucleus_as_sorting_the_whole_row_does(vocab, scale):
    """Hundreds of tokens in the nucleus (more than the reference's first sorted block): the same
    tokens kept, with the same probabilities, as the definition applied to the whole sorted row."""
    logits = torch.randn(3, vocab, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * scale
    probs = torch.softmax(logits, dim=-1)
    ours, theirs = top_p_filter(probs, 0.9), oracles.top_p_by_sorting(probs, 0.9)
    assert int((ours > 0).sum(-1).min()) > 100
    assert torch.equal(ours > 0, theirs > 0)
    assert torch.allclose(ours, theirs, rtol=1e-12, atol=0)


def test_generate_sampling_draws_only_from_the_nucleus():
    logits = torch.log(torch.tensor([0.5, 0.1, 0.3, 0.1]))
    g = torch.Generator().manual_seed(0)
    draws = sample_next_token(logits.expand(2000, -1), temperature=1.0, top_p=0.75, generator=g)
    assert set(draws.tolist()) == {0, 2}
    assert abs(float((draws == 0).float().mean()) - 0.625) < 0.05  # 5 sigma of a binomial(2000, 0.625)


# Batched generation: prompts of different lengths, left-padded into one batch, each give the ids
# they give alone. float64, so that the padded batch's different summation order cannot flip a draw.
BATCH = [[5, 17, 3, 42, 8], [9], [30, 2, 11], [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]]


@pytest.fixture(scope="module")
def model64(model):
    torch.manual_seed(0)
    return TransformerLM(TransformerLMConfig(61, CTX, 32, 2, 4, 64, 500.0, num_kv_heads=2), dtype=torch.float64).eval()


def alone(model, prompts, seeds=None, **kw):
    gens = [None] * len(prompts) if seeds is None else [torch.Generator().manual_seed(s) for s in seeds]
    return [list(generate(model, p, generator=g, **kw)) for p, g in zip(prompts, gens, strict=True)]


def batched(model, prompts, seeds=None, **kw):
    gens = None if seeds is None else [torch.Generator().manual_seed(s) for s in seeds]
    return generate_batch(model, prompts, generators=gens, **kw)


def test_generate_batch_greedy_equals_each_prompt_alone(model64):
    expected = alone(model64, BATCH, max_new_tokens=10)
    assert batched(model64, BATCH, max_new_tokens=10) == expected
    assert [len(t) for t in expected] == [10, 10, 10, 4]  # the long prompt fills the context


def test_generate_batch_seeded_sampling_equals_each_prompt_alone(model64):
    kw = dict(max_new_tokens=12, temperature=1.0, top_p=0.9)
    expected = alone(model64, BATCH, seeds=[1, 2, 3, 4], **kw)
    assert batched(model64, BATCH, seeds=[1, 2, 3, 4], **kw) == expected
    assert len({tuple(t) for t in expected}) == len(BATCH)


def test_generate_batch_each_sequence_stops_at_its_own_eos(model64):
    kw = dict(max_new_tokens=12, temperature=1.0, top_p=0.9)
    free = alone(model64, BATCH, seeds=[1, 2, 3, 4], **kw)
    eos = free[0][2]  # the first sequence stops at its third token, the others where eos comes, if it does
    expected = [t[: t.index(eos) + 1] if eos in t else t for t in free]
    assert batched(model64, BATCH, seeds=[1, 2, 3, 4], eos_token_ids=[eos], **kw) == expected
    assert len(expected[0]) == 3 and len({len(t) for t in expected}) > 1


def test_generate_batch_float32_greedy_equals_each_prompt_alone(model):
    assert batched(model, BATCH, max_new_tokens=10) == alone(model, BATCH, max_new_tokens=10)


def test_generate_batch_rejects_an_empty_prompt(model):
    with pytest.raises(ValueError, match=r"prompts\[1\] must hold at least one token"):
        generate_batch(model, [[1, 2], []], 4)


def test_generate_takes_end_of_sequence_ids_from_any_iterable(model):
    tokens = run(model)
    eos = tokens[3]
    assert run(model, eos_token_ids=iter([eos])) == tokens[: tokens.index(eos) + 1]  # read once, not per step


def test_generate_batch_takes_end_of_sequence_ids_from_any_iterable(model64):
    kw = dict(max_new_tokens=12, temperature=1.0, top_p=0.9)
    free = alone(model64, BATCH, seeds=[1, 2, 3, 4], **kw)
    eos = free[0][2]  # not the first token: a check that consumes the iterator misses it
    expected = [t[: t.index(eos) + 1] if eos in t else t for t in free]
    assert len(expected[0]) == 3
    assert batched(model64, BATCH, seeds=[1, 2, 3, 4], eos_token_ids=iter([eos]), **kw) == expected


def test_generate_batch_gives_a_full_prompt_nothing_and_a_nearly_full_one_a_token(model64):
    prompts = [[3] * CTX, [4] * (CTX - 1), [5, 6]]
    expected = alone(model64, prompts, max_new_tokens=3)
    assert [len(t) for t in expected] == [0, 1, 3]
    assert batched(model64, prompts, max_new_tokens=3) == expected
