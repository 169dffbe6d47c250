"""generate, rung by rung: which tokens top-p keeps, and renormalised; temperature 0 is the argmax;
the temperature divides the logits; top-p after the temperature; draws from the whole nucleus and
nothing else; then generation with a small float64 model: max_new_tokens new ids, each greedy one
the argmax of the model run on the whole sequence so far, seeded draws likewise, stopping after
an end-of-sequence id and when the context is full (tests/_ladder.py). Expected distributions are
written here with torch.softmax and sorting; expected tokens with the model run on the whole
sequence at every step (run_transformer_lm, laddered in tests/test_lm_ladder.py)."""

import torch

from cs336_basics.generation import sampling

from ._ladder import climb_failed, rung
from .adapters import run_generate, run_next_token_distribution, run_sample_next_token, run_top_p_filter
from .adapters import run_transformer_lm as lm_logits
from .test_lm_ladder import CTX, D_FF, HEADS, LAYERS, THETA, D, V, weights

PROBS = torch.tensor([0.1, 0.5, 0.1, 0.3], dtype=torch.float64)
LOGITS = PROBS.log()
PROMPT = torch.tensor([3, 1, 4])
SAMPLING = "cs336_basics/generation/sampling.py"
GENERATE = "generate (cs336_basics/generation/generate.py)"
# float64 softmax and division: a few ulps (2^-52 ~ 2.2e-16) per entry; 1e-12 leaves a wide margin.
REL = 1e-12


def close(got, want) -> bool:
    return got.shape == want.shape and bool(((got - want).abs() <= REL * want.abs().max()).all())


def shown(t) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in t.tolist()) + "]"


@rung(1)
def test_generate_top_p_keeps_the_smallest_set_reaching_p():
    for p, want in ((0.75, {1, 3}), (0.5, {1}), (0.55, {1, 3}), (0.95, {0, 1, 2, 3})):
        kept = set(torch.nonzero(run_top_p_filter(PROBS, p)).flatten().tolist())
        if kept != want:
            climb_failed(f"probs {shown(PROBS)}, top_p {p}: kept tokens {sorted(kept)} (mass "
                         f"{float(PROBS[sorted(kept)].sum()):.2g}), not {sorted(want)}",
                         f"top_p_filter ({SAMPLING}): the most likely tokens first, down to the one whose "
                         "probability carries their sum to >= top_p")  # fmt: skip


@rung(2)
def test_generate_top_p_renormalises_the_kept_probabilities():
    got, want = run_top_p_filter(PROBS, 0.75), torch.tensor([0.0, 0.625, 0.0, 0.375], dtype=torch.float64)
    if not close(got, want):
        climb_failed(f"probs {shown(PROBS)}, top_p 0.75: {shown(got)} (sum {float(got.sum()):.4g}), not {shown(want)}",
                     f"top_p_filter ({SAMPLING}): divide the kept probabilities by their sum")  # fmt: skip


@rung(3)
def test_generate_zero_temperature_picks_the_argmax():
    logits = torch.tensor([[0.1, 2.0, -1.0, 1.9], [3.0, -2.0, 0.0, 2.5]])
    got = run_sample_next_token(logits, 0.0, 1.0, 0).tolist()
    if got != [1, 0]:
        climb_failed(f"temperature 0 on logits rows [0.1, 2, -1, 1.9] and [3, -2, 0, 2.5]: {got}, not [1, 0]",
                     f"sample_next_token ({SAMPLING}): temperature 0 is greedy, logits.argmax(dim=-1)")  # fmt: skip


@rung(4)
def test_generate_temperature_divides_the_logits():
    got, want = run_next_token_distribution(LOGITS, 2.0, 1.0), torch.softmax(LOGITS / 2.0, -1)
    if close(got, want):
        return
    seen = {
        "softmax(logits) (the temperature had no effect)": PROBS,
        "softmax(logits * 2)": torch.softmax(LOGITS * 2, -1),
    }
    what = next((k for k, v in seen.items() if close(got, v)), shown(got))
    climb_failed(f"logits log {shown(PROBS)}, temperature 2: {what}, not softmax(logits / 2) = {shown(want)}",
                 f"next_token_distribution ({SAMPLING}): softmax(logits / temperature)")  # fmt: skip


@rung(5)
def test_generate_top_p_applies_after_the_temperature():
    got = run_next_token_distribution(LOGITS, 2.0, 0.45)
    hot = torch.softmax(LOGITS / 2.0, -1)  # [0.168, 0.375, 0.168, 0.290]: 0.45 takes tokens 1 and 3
    want = torch.where(torch.tensor([False, True, False, True]), hot, 0.0)
    want = want / want.sum()
    if not close(got, want):
        climb_failed(f"logits log {shown(PROBS)}, temperature 2, top_p 0.45: {shown(got)}, not top_p_filter("
                     f"softmax(logits / 2), 0.45) = {shown(want)}",
                     f"next_token_distribution ({SAMPLING}): top_p_filter of the tempered softmax")  # fmt: skip


@rung(6)
def test_generate_draws_from_the_whole_nucleus_and_nothing_else():
    draws = run_sample_next_token(LOGITS.expand(2000, -1), 1.0, 0.75, 0)  # token 3 missed: 0.625^2000
    drawn = sorted(set(draws.tolist()))
    if drawn != [1, 3]:
        climb_failed(f"2000 draws at temperature 1, top_p 0.75 from probs {shown(PROBS)}: tokens {drawn}, "
                     "not the nucleus [1, 3]", f"sample_next_token ({SAMPLING}): at temperature > 0, one draw per row with "
                     "torch.multinomial from next_token_distribution(logits, temperature, top_p), in vocabulary order")  # fmt: skip


def generated(w, prompt=PROMPT, n=5, **kwargs) -> list[int]:
    with torch.no_grad():
        return run_generate(V, CTX, D, LAYERS, HEADS, D_FF, THETA, w, prompt, n, **kwargs).tolist()


def recomputed(w, prompt, n, pick) -> list[int]:
    """n tokens, each pick(logits of the last position of the model run on the whole sequence so far)."""
    ids = prompt.tolist()
    for _ in range(n):
        with torch.no_grad():
            ids.append(int(pick(lm_logits(V, CTX, D, LAYERS, HEADS, D_FF, THETA, w, torch.tensor([ids]))[0, -1])))
    return ids[len(prompt) :]


@rung(7)
def test_generate_returns_max_new_tokens_new_ids():
    got = generated(weights(), n=5)
    if len(got) != 5 or got[:3] == PROMPT.tolist():
        seen = ", starting with the prompt" if got[:3] == PROMPT.tolist() else ""
        climb_failed(f"prompt {PROMPT.tolist()}, max_new_tokens 5, no eos: {len(got)} ids{seen}: {got}",
                     f"{GENERATE}: yield each new token id, max_new_tokens of them, and not the prompt's")  # fmt: skip


@rung(8)
def test_generate_greedy_tokens_are_the_argmax_of_the_whole_sequence():
    w = weights()
    got, want = generated(w, n=8), recomputed(w, PROMPT, 8, lambda t: t.argmax())
    if got != want:
        first = next(i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b)
        climb_failed(f"greedy from prompt {PROMPT.tolist()}: {got}; the argmax of the model run on the whole sequence "
                     f"at each step gives {want} (first differs at new token {first})",
                     f"{GENERATE}: the logits of the last position, each step after the prompt feeding the token "
                     "just chosen at the next position (with a cache: only that token, at position len(sequence))")  # fmt: skip


@rung(9)
def test_generate_seeded_draws_follow_the_whole_sequence():
    w, g = weights(), torch.Generator().manual_seed(3)
    got = generated(w, n=8, temperature=1.0, top_p=0.9, seed=3)
    want = recomputed(w, PROMPT, 8, lambda t: sampling.sample_next_token(t, 1.0, 0.9, g))
    if got != want:
        climb_failed(f"temperature 1, top_p 0.9, seed 3: {got}; one draw a step from the model run on the whole "
                     f"sequence with the same generator gives {want}",
                     f"{GENERATE}: one sample_next_token(logits, temperature, top_p, generator) per new token")  # fmt: skip


@rung(10)
def test_generate_stops_after_an_end_of_sequence_id_and_yields_it():
    w = weights()
    free = generated(w, n=8)
    eos = free[2]
    want = free[: free.index(eos) + 1]
    got = generated(w, n=8, eos_token_id=eos)
    if got != want:
        climb_failed(f"greedy ids {free}; with eos id {eos}: {got}, not {want} (up to and with the first {eos})",
                     f"{GENERATE}: yield the token, then stop if it is in eos_token_ids")  # fmt: skip


@rung(11)
def test_generate_yields_at_most_what_the_context_holds():
    got = generated(weights(), n=100)
    if len(got) != CTX - len(PROMPT):
        climb_failed(f"context_length {CTX}, prompt of {len(PROMPT)}, max_new_tokens 100: {len(got)} new ids, "
                     f"not {CTX - len(PROMPT)}", f"{GENERATE}: at most context_length - len(prompt) new tokens")  # fmt: skip
