"""Generation: the key/value cache gives the same tokens as recomputing the whole prefix at
every step (greedy and seeded sampling); stopping rules; nucleus filtering."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.generate import generate
from cs336_basics.nn import TransformerLM, TransformerLMConfig
from cs336_basics.sampling import sample_next_token, top_p_filter

from . import adapters

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


def test_generate_top_p_keeps_the_smallest_nucleus():
    probs = torch.tensor([0.5, 0.1, 0.3, 0.1])
    assert torch.allclose(top_p_filter(probs, 0.75), torch.tensor([0.625, 0.0, 0.375, 0.0]))
    assert torch.allclose(top_p_filter(probs, 0.5), torch.tensor([1.0, 0.0, 0.0, 0.0]))


def test_generate_sampling_draws_only_from_the_nucleus():
    logits = torch.log(torch.tensor([0.5, 0.1, 0.3, 0.1]))
    g = torch.Generator().manual_seed(0)
    draws = sample_next_token(logits.expand(2000, -1), temperature=1.0, top_p=0.75, generator=g)
    assert set(draws.tolist()) == {0, 2}
    assert abs(float((draws == 0).float().mean()) - 0.625) < 0.05  # 5 sigma of a binomial(2000, 0.625)
