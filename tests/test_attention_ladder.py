"""scaled_dot_product_attention, rung by rung: the output's shape and dtype; each query's weights
sum to 1 over the keys; the 1/sqrt(d_k) scale; a query's output ignores the other queries; the
formula on random inputs; the order of the keys does not matter; with a mask, the allowed keys'
weights still sum to 1; the mask's polarity (True = may attend); the formula over the allowed
keys; a query that may attend to nothing gets zeros; masks with leading dimensions; large scores;
half precision (tests/_ladder.py). Inputs are tiny and float64; expected values are computed here
with math. float64 attention over at most 5 keys rounds each output at about 1e-16 relative (the
floor attention.f64 is 6.9e-16), so 1e-12 separates rounding from a wrong formula."""

import itertools
import math

import torch

from ._helpers import raised, rand
from ._ladder import climb_failed, rung
from .adapters import run_scaled_dot_product_attention

F64 = torch.float64
EXACT = 1e-12  # float64 rounding of these few sums and products is ~1e-16 (see the docstring)
Q, K, V = rand(2, 3, 4, seed=1), rand(2, 5, 4, seed=2), rand(2, 5, 6, seed=3)
FORMULA = "attention(Q, K, V) = softmax(Q K^T / sqrt(d_k), dim=-1) V"


def attend(q, k, v, mask=None) -> torch.Tensor:
    try:
        out = run_scaled_dot_product_attention(q, k, v, mask)
    except Exception as caught:  # noqa: BLE001 - the rung reports it with the shapes
        climb_failed(f"Q {tuple(q.shape)}, K {tuple(k.shape)}, V {tuple(v.shape)}: {raised(caught)}",
                     "each product's shapes and dtypes: Q K^T (..., queries, keys) takes K.transpose(-2, -1); the "
                     "weights (..., queries, keys) @ V (..., keys, d_v) take one dtype, V's")  # fmt: skip
    return out


def off(a: torch.Tensor, e: torch.Tensor) -> float:
    """The largest |a - e| relative to the size of e's entries."""
    return float(((a - e).abs() / (e.abs() + e.pow(2).mean().sqrt() + 1e-300)).max())


def expected(q, k, v, mask=None) -> torch.Tensor:
    """The formula in float64, one query at a time with math's exp (fully masked: zeros)."""
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=F64)
    for idx in itertools.product(*map(range, q.shape[:-1])):
        lead = idx[:-1]
        keep = [True] * k.shape[-2] if mask is None else mask.expand(*q.shape[:-1], k.shape[-2])[idx].tolist()
        s = [float(q[idx] @ k[lead][j]) / math.sqrt(q.shape[-1]) for j in range(k.shape[-2])]
        top = max((x for x, ok in zip(s, keep, strict=True) if ok), default=0.0)
        w = [math.exp(x - top) if ok else 0.0 for x, ok in zip(s, keep, strict=True)]
        if sum(w) > 0:
            out[idx] = sum(wj / sum(w) * v[lead][j] for j, wj in enumerate(w))
    return out


@rung(1)
def test_attention_returns_queries_by_d_v_in_the_inputs_dtype():
    out = attend(Q, K, V)
    if not isinstance(out, torch.Tensor) or out.shape != (2, 3, 6) or out.dtype != F64:
        got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
        climb_failed(f"Q (2, 3, 4), K (2, 5, 4), V (2, 5, 6) in float64 gave {got}, expected (2, 3, 6) float64",
                     "the output is (..., queries, d_v): the weights (..., queries, keys) times V (..., keys, d_v)")  # fmt: skip


@rung(2)
def test_attention_weights_of_each_query_sum_to_one_over_the_keys():
    out = attend(Q, K, torch.ones(2, 5, 1, dtype=F64))
    if (out - 1).abs().max() > EXACT:
        climb_failed(f"with V all ones the output is each query's sum of weights: got {out[0, :, 0].tolist()} "
                     "(batch 0), expected 1 for every query",
                     "the softmax of each query's scores, over the keys: dim=-1 of (..., queries, keys)")  # fmt: skip


@rung(3)
def test_attention_divides_the_scores_by_the_root_of_d_k():
    q = torch.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=F64)
    k = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]], dtype=F64)
    v = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=F64)  # d_v = 3: not d_k, not the 2 keys
    got, want = float(attend(q, k, v)[0, 0]), 1 / (1 + math.exp(-2.0))
    if abs(got - want) > EXACT:
        scale = 4 / math.log(got / (1 - got)) if 0 < got < 1 and got != 0.5 else float("nan")
        named = {1.0: " (not scaled)", 4.0: " = d_k", math.sqrt(3): " = sqrt(d_v), V's last dimension",
                 math.sqrt(2): " = sqrt(2), the root of the number of keys"}  # fmt: skip
        seen = next((w for c, w in named.items() if abs(scale - c) < 1e-9), "")
        climb_failed(f"d_k = 4, scores q.k = (4, 0), V[:, 0] = (1, 0): output {got:.10g}, expected softmax(4/2, 0)[0]"
                     f" = {want:.10g}; the scores were divided by {scale:.6g}{seen}, not sqrt(d_k) = 2",
                     "the scale of the scores: Q K^T / sqrt(d_k), d_k being Q's (and K's) last dimension")  # fmt: skip


@rung(4)
def test_attention_output_of_a_query_ignores_the_other_queries():
    alone = torch.cat([attend(Q[:, i : i + 1], K, V) for i in range(3)], dim=1)
    together = attend(Q, K, V)
    if off(together, alone) > EXACT:
        climb_failed(f"queries attended together vs one at a time differ by up to {off(together, alone):.3g} "
                     "(relative): a query's weights depend on the other queries",
                     "every reduction of the softmax runs over the keys (dim=-1), none over the queries")  # fmt: skip


@rung(5)
def test_attention_matches_the_formula_computed_by_hand():
    got, want = attend(Q, K, V), expected(Q, K, V)
    if off(got, want) > EXACT:
        climb_failed(f"random Q, K, V: output off by up to {off(got, want):.3g} (relative) from {FORMULA}",
                     FORMULA)  # fmt: skip


@rung(6)
def test_attention_permuting_the_keys_with_their_values_changes_nothing():
    perm = torch.tensor([3, 0, 4, 1, 2])
    got, want = attend(Q, K[:, perm], V[:, perm]), attend(Q, K, V)
    if off(got, want) > EXACT:
        climb_failed(f"the keys and values permuted together changed the output by up to {off(got, want):.3g}",
                     "keys and values pair up by index along the keys dimension (dim=-2 of K and V)")  # fmt: skip


PARTIAL = torch.tensor([[True, True, False, False, True], [False, True, True, False, False],
                        [True, True, True, True, False]])  # fmt: skip
ONLY_KEY_1 = torch.tensor([[False, True, False, False, False]] * 3)  # every query may attend to key 1 only


@rung(7)
def test_attention_weights_of_the_allowed_keys_sum_to_one():
    out = attend(Q, K, torch.ones(2, 5, 1, dtype=F64), PARTIAL)
    if (out - 1).abs().max() > EXACT:
        share = ": the masked keys' share went to no key" if (out < 1).all() else ""
        climb_failed(f"a partial mask, V all ones: the weights of each query sum to {out[0, :, 0].tolist()} "
                     f"(batch 0), expected 1{share}",
                     "mask the scores (-inf where False) before the softmax, so that it normalises over the "
                     "allowed keys only")  # fmt: skip


@rung(8)
def test_attention_mask_true_means_may_attend():
    got = attend(Q, K, V, ONLY_KEY_1)
    want = V[:, 1:2].expand(2, 3, 6)
    if off(got, want) > EXACT:
        others = expected(Q, K, V, ~ONLY_KEY_1)
        inverted = off(got, others) < 1e-9
        seen = " = attention over the keys where the mask is False" if inverted else ""
        climb_failed(f"a mask True at key 1 only: output of query 0 {[round(x, 4) for x in got[0, 0].tolist()]}"
                     f"{seen}, expected V[1] = {[round(x, 4) for x in V[0, 1].tolist()]}",
                     "the handout's mask is True where a query may attend: -inf goes where the mask is False "
                     "(masked_fill(~mask, -inf))" if inverted else "a query allowed one key gives it weight 1: "
                     "its output is that key's value")  # fmt: skip


@rung(9)
def test_attention_with_a_partial_mask_matches_the_formula_over_the_allowed_keys():
    got, want = attend(Q, K, V, PARTIAL), expected(Q, K, V, PARTIAL)
    if off(got, want) > EXACT:
        climb_failed(f"a partial mask: output off by up to {off(got, want):.3g} from {FORMULA} over the allowed "
                     "keys", "scores of masked keys become -inf before the softmax, the others are unchanged")  # fmt: skip


@rung(10)
def test_attention_of_a_query_that_may_attend_to_nothing_is_zero():
    mask = torch.tensor([[True, False, True, False, False], [False] * 5, [True] * 5])
    row = attend(Q, K, V, mask)[:, 1]
    if torch.isnan(row).any():
        climb_failed("a query with every key masked gave NaN, expected zeros",
                     "the handout: a query that may attend to nothing gets zeros, as the handout's softmax gives "
                     "for a fully masked row (`pytest -k softmax`); torch.softmax gives NaN there, "
                     "exp(-inf - (-inf))")  # fmt: skip
    if row.abs().max() != 0:
        uniform = off(row, V.mean(1)) < 1e-9
        mean = " = the values' mean (equal weights on every key)" if uniform else ""
        climb_failed(f"a query with every key masked gave {[round(x, 4) for x in row[0].tolist()]}{mean}, expected "
                     "zeros", "masked scores must be -inf, not a finite fill (equal fills give equal weights), and "
                     "a row of -inf gives zero weights (the handout's softmax)" if uniform else "a query with no "
                     "allowed key: every weight is 0 (the handout's softmax of a row of -inf), so its output is 0")  # fmt: skip


@rung(11)
def test_attention_mask_with_leading_dimensions_applies_per_batch_entry():
    mask = torch.stack([ONLY_KEY_1, ~ONLY_KEY_1])[:, None].expand(2, 2, 3, 5)  # (batch, heads, queries, keys)
    q, k, v = (t[:, None].expand(2, 2, *t.shape[1:]) for t in (Q, K, V))
    got, want = attend(q, k, v, mask), expected(q, k, v, mask)
    if off(got, want) > EXACT:
        climb_failed(f"a mask of shape (2, 2, 3, 5), a different one per batch entry: output off by up to "
                     f"{off(got, want):.3g}", "the mask broadcasts against the scores (..., queries, keys): "
                     "masked_fill applies it entry by entry")  # fmt: skip


@rung(12)
def test_attention_of_scores_near_1e4_is_finite():
    q = torch.tensor([[100.0, 0.0], [0.0, -100.0]], dtype=F64)
    k = torch.tensor([[141.0, 0.0], [140.0, 1.0], [0.0, 142.0]], dtype=F64)
    got, want = attend(q, k, V[0, :3]), expected(q, k, V[0, :3])
    # Scores near 1.4e4 round at ulp(1.4e4) ~ 2e-12, which exp turns into a relative error of the weights
    # of the same size (the floor attention.f64_large_scores is 7.3e-13): 1e-9 is rounding's bound.
    if not torch.isfinite(got).all() or off(got, want) > 1e-9:
        climb_failed(f"scores near 1e4 (q.k = 14100, 14000, ...): output {got[0, :3].tolist()}..., expected "
                     f"{want[0, :3].tolist()}...", "subtract each query's max score before exp (your softmax "
                     "does): exp(1e4) overflows")  # fmt: skip


@rung(13)
def test_attention_in_half_precision_sums_70000_keys_in_float32():
    n = 70_000  # more keys than float16's largest number, 65504: a float16 sum of their exps is inf
    q, k = torch.zeros(1, 2, dtype=torch.float16), torch.zeros(n, 2, dtype=torch.float16)
    out = attend(q, k, torch.ones(n, 1, dtype=torch.float16))
    if out.dtype != torch.float16:
        climb_failed(f"float16 inputs gave an output of dtype {out.dtype}", "return V's dtype")
    # Each weight 1/70000 is cast to float16 (a subnormal: error <= 2^-25, 0.2% of the sum) and the
    # output rounded once (2^-11): the output is within 0.003 of 1.
    if not abs(float(out) - 1) < 0.003:
        climb_failed(f"70000 equal float16 scores, V all ones: output {float(out)}, expected 1 (weights 1/70000)",
                     "the handout computes the scores' softmax in float32 for half types: upcast the scores "
                     "before the softmax, cast the weights to V's dtype after")  # fmt: skip
