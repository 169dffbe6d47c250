"""Multi-head self-attention, rung by rung: the output's shape and dtype; a position's output
ignores later tokens; the first token attends to itself; heads split and merged as (num_heads,
d_k) blocks of features; RoPE rotating the queries and keys, not the values; the output unchanged
when every position shifts by one constant; rotation at token_positions; grouped-query and
multi-query key/value heads; a key/value cache giving the whole sequence's output; a padding mask
hiding its keys (tests/_ladder.py). The student's module is reached through the adapters, as in
tests/test_mha.py. Expected values are computed here in float64 with torch's elementary operations;
attention over at most 5 keys rounds at about 1e-16 relative (the floor mha.f64 is 2.9e-15), so
1e-12 separates rounding from a wrong formula."""

import math

import torch

from ._helpers import raised, rand
from ._ladder import climb_failed, rung
from .adapters import (
    run_multihead_self_attention,
    run_multihead_self_attention_cached,
    run_multihead_self_attention_with_rope,
)

F64 = torch.float64
EXACT = 1e-12  # float64 rounding of these few sums and products is ~1e-16 (see the docstring)
D, THETA, MAX_LEN = 8, 100.0, 32
X = rand(2, 4, D, seed=11)
WQ, WK, WV, WO = (rand(D, D, seed=s, std=0.5) for s in (12, 13, 14, 15))
STEPS = "q, k, v = x Wq^T, x Wk^T, x Wv^T; split each into heads; attention per head; merge; out = merged Wo^T"


def split(t: torch.Tensor, d_k: int, strided: bool = False) -> torch.Tensor:
    """(..., seq, heads * d_k) -> (..., heads, seq, d_k); strided: head h takes features h, h + heads, ..."""
    heads = t.unflatten(-1, (d_k, -1)).transpose(-1, -2) if strided else t.unflatten(-1, (-1, d_k))
    return heads.transpose(-3, -2)


def rotated(t: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """RoPE of (..., seq, d_k) at positions (..., seq): adjacent pairs, angle position * theta^(-2k/d_k)."""
    d_k = t.shape[-1]
    angle = positions[..., None].double() * THETA ** (-torch.arange(0, d_k, 2, dtype=F64) / d_k)
    x0, x1 = t[..., 0::2], t[..., 1::2]
    return torch.stack((x0 * angle.cos() - x1 * angle.sin(), x0 * angle.sin() + x1 * angle.cos()), -1).flatten(-2)


def formula(x, heads, wk=WK, wv=WV, positions=None, keep=None, strided=False, tiled=False) -> torch.Tensor:
    """Causal multi-head self-attention in float64; keep (..., keys) False at padding keys."""
    d_k = WQ.shape[0] // heads
    q, k, v = (split(x @ w.T, d_k, strided) for w in (WQ, wk, wv))
    if positions is not None:  # (..., seq) -> (..., 1, seq): the same positions for every head
        q, k = rotated(q, positions.unsqueeze(-2)), rotated(k, positions.unsqueeze(-2))
    group = heads // k.shape[-3]
    k, v = (t.repeat(1, group, 1, 1) if tiled else t.repeat_interleave(group, dim=-3) for t in (k, v))
    seq = x.shape[-2]
    mask = torch.ones(seq, seq, dtype=torch.bool).tril()
    if keep is not None:
        mask = mask & keep[..., None, None, :]
    scores = (q @ k.mT / math.sqrt(d_k)).masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a query with no key left gets zeros
    return (probs @ v).transpose(-3, -2).flatten(-2) @ WO.T


def off(a: torch.Tensor, e: torch.Tensor) -> float:
    """The largest |a - e| relative to the size of e's entries."""
    a, e = a.detach(), e.detach()
    return float(((a - e).abs() / (e.abs() + e.pow(2).mean().sqrt())).max())


def call(run, *args, **kwargs) -> torch.Tensor:
    try:
        return run(*args, **kwargs)
    except Exception as caught:  # noqa: BLE001 - the rung reports it with the shapes
        x = next(a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.dim() == 3)
        climb_failed(f"x {tuple(x.shape)}, d_model {D}: {raised(caught)}", STEPS)


def mha(x, heads=2, wk=WK, wv=WV) -> torch.Tensor:
    return call(run_multihead_self_attention, D, heads, WQ, wk, wv, WO, x)


def mha_rope(x, positions=None, heads=2) -> torch.Tensor:
    return call(run_multihead_self_attention_with_rope, D, heads, MAX_LEN, THETA, WQ, WK, WV, WO, x, positions)


def cached(x, prefill: int, keep=None, heads=2, wk=WK, wv=WV) -> torch.Tensor:
    return call(run_multihead_self_attention_cached, D, heads, MAX_LEN, THETA, WQ, wk, wv, WO, x, prefill, keep)


@rung(1)
def test_mha_returns_the_shape_and_dtype_of_x():
    out = mha(X)
    if not isinstance(out, torch.Tensor) or out.shape != X.shape or out.dtype != F64:
        got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
        climb_failed(f"x (2, 4, {D}) float64, 2 heads, gave {got}", f"the output is (..., seq, d_model): {STEPS}")


@rung(2)
def test_mha_outputs_before_a_position_ignore_the_later_tokens():
    changed = X.clone()
    changed[:, 2:] = rand(2, 2, D, seed=16)
    a, b = mha(X)[:, :2], mha(changed)[:, :2]
    if off(b, a) > EXACT:
        seen = ", as without a causal mask" if off(mha(X), _unmasked(X)) < 1e-9 else ""
        climb_failed(f"tokens 2 and 3 replaced: the outputs at positions 0 and 1 changed by up to {off(b, a):.3g} "
                     f"(relative){seen}", "position i's output depends on tokens 0..i only: the causal mask "
                     "(query i sees keys j <= i), and heads split and merged without mixing positions: "
                     "(..., seq, heads, d_k) <-> (..., heads, seq, d_k) by transpose(-3, -2), both ways")  # fmt: skip


def _unmasked(x) -> torch.Tensor:
    """Multi-head attention of x with 2 heads and no mask at all."""
    q, k, v = (split(x @ w.T, D // 2) for w in (WQ, WK, WV))
    probs = torch.softmax(q @ k.mT / math.sqrt(D // 2), dim=-1)
    return (probs @ v).transpose(-3, -2).flatten(-2) @ WO.T


@rung(3)
def test_mha_first_token_attends_to_itself():
    got, want = mha(X)[:, 0], X[:, 0] @ WV.T @ WO.T
    if off(got, want) > EXACT:
        zero = ": zeros, as if it attended to no key" if got.abs().max() == 0 else ""
        nan = ": NaN, as if it attended to no key" if torch.isnan(got).any() else ""
        climb_failed(f"the first token's output {[round(v, 4) for v in got[0].tolist()[:4]]}...{zero or nan}, "
                     f"expected its own value, x[0] Wv^T Wo^T = {[round(v, 4) for v in want[0].tolist()[:4]]}...",
                     "the causal mask lets query i see keys j <= i: its own key too (tril with diagonal 0)"
                     if zero or nan else "position 0 sees its own key only (weight 1): its output is x Wv^T "
                     "split into heads and merged back into the same feature order, times Wo^T")  # fmt: skip


@rung(4)
def test_mha_splits_heads_into_consecutive_d_k_features():
    got, want = mha(X), formula(X, 2)
    if off(got, want) > EXACT:
        strided = " = heads taking every num_heads-th feature (split as (d_k, num_heads))" if off(
            got, formula(X, 2, strided=True)) < 1e-9 else ""  # fmt: skip
        climb_failed(f"2 heads of d_k = 4, no rotation: output off by up to {off(got, want):.3g} (relative) from "
                     f"the heads' formula{strided}", "head h is features h*d_k .. (h+1)*d_k - 1 of q, k and v: "
                     "unflatten(-1, (num_heads, d_k)), then transpose(-3, -2); merge in the reverse order")  # fmt: skip


@rung(5)
def test_mha_rotates_queries_and_keys_not_values():
    x = X[:, :1]
    got, want = mha_rope(x, torch.tensor([9])), x @ WV.T @ WO.T
    if off(got, want) > EXACT:
        value = rotated(split(x @ WV.T, D // 2), torch.tensor([[9]])).transpose(-3, -2).flatten(-2) @ WO.T
        seen = " = its value rotated at position 9" if off(got, value) < 1e-9 else ""
        climb_failed(f"one token at position 9 (it attends to itself alone, with weight 1): output off by up to "
                     f"{off(got, want):.3g} from its value x Wv^T Wo^T{seen}", "RoPE rotates q and k, whose "
                     "angles cancel in q.k of one token with itself; v goes into the output unrotated")  # fmt: skip


@rung(6)
def test_mha_with_rotation_ignores_a_shift_of_every_position():
    a, b = mha_rope(X, torch.arange(4)), mha_rope(X, torch.arange(7, 11))
    if off(b, a) > EXACT:
        climb_failed(f"positions 0..3 vs 7..10: outputs differ by up to {off(b, a):.3g} (relative); q.k of "
                     "rotated q and k depends on the offset m - n only", "rotate q and k, each at its token's "
                     "position, and nothing else")  # fmt: skip


@rung(7)
def test_mha_rotates_at_the_token_positions():
    positions = torch.tensor([[3, 0, 7, 7], [1, 2, 3, 4]])
    got, want = mha_rope(X, positions), formula(X, 2, positions=positions)
    if off(got, want) > EXACT:
        climb_failed(f"token_positions {positions.tolist()}: output off by up to {off(got, want):.3g} from the "
                     "formula with q and k rotated at those positions", "RoPE of q and k at token_positions "
                     "(..., seq), the same positions for every head")  # fmt: skip
    got, want = mha_rope(X), formula(X, 2, positions=torch.arange(4))
    if off(got, want) > EXACT:
        climb_failed(f"no token_positions: output off by up to {off(got, want):.3g} from the formula at "
                     "positions 0..3", "without token_positions (and no cache) the positions are 0, 1, ..., seq-1")  # fmt: skip


def _gqa(kv_heads: int, heads: int = 4) -> None:
    rows = kv_heads * D // heads
    wk, wv = WK[:rows], WV[:rows]
    got, want = mha(X, heads, wk, wv), formula(X, heads, wk, wv)
    if off(got, want) > EXACT:
        tiled = ""
        if off(got, formula(X, heads, wk, wv, tiled=True)) < 1e-9:
            tiled = " = query head h reading key/value head h % num_kv_heads"
        climb_failed(f"{heads} query heads, {kv_heads} key/value heads (Wk, Wv of {rows} rows): output off by up "
                     f"to {off(got, want):.3g}{tiled}", "query head h reads key/value head h // (num_heads / "
                     "num_kv_heads): consecutive query heads share one (repeat_interleave, HF's repeat_kv)")  # fmt: skip


@rung(8)
def test_mha_grouped_query_heads_share_key_value_heads():
    _gqa(2)


@rung(9)
def test_mha_multi_query_heads_share_one_key_value_head():
    _gqa(1)


@rung(10)
def test_mha_cache_prefill_then_one_token_at_a_time_gives_the_whole_pass():
    whole, want = cached(X, 4), formula(X, 2, positions=torch.arange(4))
    if off(whole, want) > EXACT:
        climb_failed(f"with a key/value cache, all 4 tokens in one call: output off by up to {off(whole, want):.3g}"
                     " from the formula at positions 0..3", "with an empty cache the positions start at 0; the "
                     "cache returns the new keys and values themselves")  # fmt: skip
    for prefill in (1, 2):
        steps = cached(X, prefill)
        if off(steps, whole) > EXACT:
            bad = [i for i in range(4) if off(steps[:, i], whole[:, i]) > EXACT]
            climb_failed(f"prefill of {prefill} then one token a call: positions {bad} differ from the whole "
                         f"pass by up to {off(steps, whole):.3g}", "a call after the cache holds n tokens "
                         "rotates its tokens at positions n, n+1, ..., appends its keys and values, and attends "
                         "to every cached key and its own (the causal mask offset by n)")  # fmt: skip


@rung(11)
def test_mha_padding_mask_hides_its_keys_in_one_call_and_in_steps():
    keep = torch.tensor([[False, True, True, True], [False, False, True, True]])  # left padding
    got, want = cached(X, 4, keep), formula(X, 2, positions=torch.arange(4), keep=keep)
    real = keep[..., None]
    if off(got * real, want * real) > EXACT:
        climb_failed(f"attention_mask {keep.int().tolist()} (0 = padding): the real tokens' outputs are off by up "
                     f"to {off(got * real, want * real):.3g} from the formula where no query attends to a "
                     "padding key", "attention_mask (..., keys) is False at padding keys: combine it with the "
                     "causal mask for every head and query, (..., 1, 1, keys)")  # fmt: skip
    steps = cached(X, 2, keep)
    if off(steps * real, got * real) > EXACT:
        climb_failed(f"attention_mask {keep.int().tolist()}: prefill of 2 then one token a call differs from one "
                     f"call by up to {off(steps * real, got * real):.3g} at the real tokens",
                     "each call gets the mask up to its last key (cached + new): apply all of it")  # fmt: skip


@rung(12)
def test_mha_returns_bfloat16_for_bfloat16_inputs():
    x = X.to(torch.bfloat16)
    out = call(run_multihead_self_attention, D, 2, *(w.to(torch.bfloat16) for w in (WQ, WK, WV, WO)), x)
    if out.dtype != torch.bfloat16 or not torch.isfinite(out).all():
        climb_failed(f"bfloat16 x and weights gave dtype {out.dtype} (finite: {bool(torch.isfinite(out).all())})",
                     "the handout: multi-head attention runs in x's dtype (attention's softmax in float32)")  # fmt: skip
