"""rope, rung by rung: the output's shape and dtype; position 0 is the identity; a rotation keeps
each pair's length; one pair rotated counter-clockwise by its position's angle; adjacent pairs
(x[2k], x[2k+1]) rotated, not halves; pair k's frequency theta^(-2k / d_k); each token's own
position from token_positions, also per batch entry; q.k depending on the offset m - n only;
half precision computed in float32 (tests/_ladder.py). Inputs are tiny and float64; expected
values are computed here with math, pair by pair. A float64 rotation rounds each output at about
1e-16 of the pair's length (the floor rope.offset is 2.8e-15), so 1e-12 separates rounding from a
wrong formula."""

import math

import torch

from ._helpers import raised, rand
from ._ladder import climb_failed, rung
from .adapters import run_rope

F64 = torch.float64
EXACT = 1e-12  # float64 rounding of a rotation is ~1e-16 of the pair's length (see the docstring)
ROTATION = "out[2k] = x[2k] cos(a) - x[2k+1] sin(a), out[2k+1] = x[2k] sin(a) + x[2k+1] cos(a)"
ANGLE = "a = position * theta^(-2k / d_k) for pair k"


def rotate(x, positions, d_k=None, theta=10000.0, max_seq_len=64) -> torch.Tensor:
    d_k = d_k or x.shape[-1]
    try:
        out = run_rope(d_k, theta, max_seq_len, x, positions)
    except Exception as caught:  # noqa: BLE001 - the rung reports it with the shapes
        climb_failed(f"x {tuple(x.shape)}, token_positions {tuple(positions.shape)}: {raised(caught)}",
                     "the shapes and dtypes along the way: cos[token_positions] and sin[token_positions] are "
                     "(..., seq, d_k / 2), as x's pairs are; both in one dtype (float32 for half types)")  # fmt: skip
    return out


def expected(x, positions, theta=10000.0) -> torch.Tensor:
    """The rotation pair by pair with math's cos and sin (positions broadcast against x's rows)."""
    d = x.shape[-1]
    pos = positions.expand(x.shape[:-1])
    out = torch.empty_like(x)
    for idx in zip(*(t.reshape(-1) for t in torch.meshgrid(*map(torch.arange, x.shape[:-1]), indexing="ij")),
                   strict=True):  # fmt: skip
        for k in range(d // 2):
            a = int(pos[idx]) * theta ** (-2 * k / d)
            x0, x1 = float(x[idx][2 * k]), float(x[idx][2 * k + 1])
            out[idx + (2 * k,)] = x0 * math.cos(a) - x1 * math.sin(a)
            out[idx + (2 * k + 1,)] = x0 * math.sin(a) + x1 * math.cos(a)
    return out


def worst(a: torch.Tensor, e: torch.Tensor) -> float:
    """The largest |a - e| relative to the size of e's entries."""
    return float(((a - e).abs() / (e.abs() + e.pow(2).mean().sqrt())).max())


X = rand(2, 3, 6, seed=4)
POSITIONS = torch.tensor([5, 0, 17])


def short(t: torch.Tensor) -> list:
    return [round(v, 4) for v in t.tolist()]


@rung(1)
def test_rope_returns_the_shape_and_dtype_of_x():
    out = rotate(X, POSITIONS)
    if not isinstance(out, torch.Tensor) or out.shape != X.shape or out.dtype != F64:
        got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
        climb_failed(f"x (2, 3, 6) float64 gave {got}", "return x's shape and dtype: each pair rotated in place")


@rung(2)
def test_rope_at_position_zero_is_the_identity():
    out = rotate(X, torch.zeros(3, dtype=torch.long))
    if worst(out, X) > EXACT:
        b, i = divmod(int((out - X).abs().amax(-1).argmax()), 3)
        by_index = (
            " (as if rotated by its index in the sequence)" if worst(out, expected(X, torch.arange(3))) < 1e-9 else ""
        )
        climb_failed(f"every token at position 0: token {i} = {short(X[b, i])} became {short(out[b, i])}{by_index}, "
                     "expected unchanged (every angle is 0)", f"the angles, {ANGLE}, with the positions of "
                     "token_positions: 0 for every token here")  # fmt: skip


@rung(3)
def test_rope_keeps_the_length_of_every_pair():
    out = rotate(X, POSITIONS)
    norms, want = out.unflatten(-1, (3, 2)).norm(dim=-1), X.unflatten(-1, (3, 2)).norm(dim=-1)
    if worst(norms, want) > EXACT:
        halves = out.unflatten(-1, (2, 3)).norm(dim=-2), X.unflatten(-1, (2, 3)).norm(dim=-2)
        seen = ("; the lengths of (x[k], x[k + d_k/2]) are kept instead: those are the pairs rotated"
                if worst(*halves) < 1e-9 else "")  # fmt: skip
        climb_failed(f"lengths of the pairs (x[2k], x[2k+1]) of token 0: {short(want[0, 0])} became "
                     f"{short(norms[0, 0])}; a rotation keeps them{seen}", f"a rotation of each pair: {ROTATION}")  # fmt: skip


@rung(4)
def test_rope_rotates_a_pair_counter_clockwise_by_its_angle():
    out = rotate(torch.tensor([[1.0, 0.0]], dtype=F64), torch.tensor([1]), theta=10000.0)
    want = [math.cos(1.0), math.sin(1.0)]
    if max(abs(a - b) for a, b in zip(out[0].tolist(), want, strict=True)) > EXACT:
        seen = " (the rotation by -1)" if abs(out[0, 0] - want[0]) < EXACT and abs(out[0, 1] + want[1]) < EXACT else ""
        climb_failed(f"d_k = 2, x = (1, 0) at position 1: {short(out[0])}{seen}, expected (cos 1, sin 1) = "
                     f"{short(torch.tensor(want))}", ROTATION)  # fmt: skip


@rung(5)
def test_rope_rotates_adjacent_pairs():
    out = rotate(torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=F64), torch.tensor([1]), theta=100.0)
    want = [math.cos(1.0), math.sin(1.0), 0.0, 0.0]
    if max(abs(a - b) for a, b in zip(out[0].tolist(), want, strict=True)) > EXACT:
        halves = max(abs(a - b) for a, b in zip(out[0].tolist(), [want[0], 0, want[1], 0], strict=True)) < EXACT
        seen = ": x[0] was paired with x[2] = x[0 + d_k/2]" if halves else ""
        climb_failed(f"d_k = 4, x = (1, 0, 0, 0) at position 1: {short(out[0])}, expected (cos 1, sin 1, 0, 0): "
                     f"pair 0 is (x[0], x[1]){seen}", "the handout rotates adjacent pairs (x[2k], x[2k+1]) "
                     "(interleaved, as Meta's llama), not x[k] with x[k + d_k/2] (Hugging Face's rotate_half)")  # fmt: skip


@rung(6)
def test_rope_rotates_pair_k_at_frequency_theta_to_the_minus_2k_over_d_k():
    out = rotate(torch.tensor([[0.0, 0.0, 1.0, 0.0]], dtype=F64), torch.tensor([1]), theta=100.0)
    got, want = math.atan2(float(out[0, 3]), float(out[0, 2])), 100.0 ** (-2 / 4)
    if abs(got - want) > EXACT:
        named = {
            100.0 ** (-1 / 4): " = theta^(-k / d_k), not theta^(-2k / d_k)",
            10000.0 ** (-2 / 4): " = 10000^(-2 / 4): the angle of theta = 10000, not of the given theta = 100",
        }
        seen = next((w for v, w in named.items() if abs(got - v) < 1e-9), "")
        climb_failed(f"d_k = 4, theta = 100, pair 1 = (1, 0) at position 1 turned by {got:.6g} rad{seen}, expected "
                     f"theta^(-2 / 4) = {want:.6g}", f"the frequencies: {ANGLE}, k = 0 .. d_k/2 - 1")  # fmt: skip


@rung(7)
def test_rope_rotates_each_token_by_its_own_token_position():
    got, want = rotate(X, POSITIONS), expected(X, POSITIONS)
    if worst(got, want) > EXACT:
        seen = ""
        if worst(got, expected(X, torch.arange(3))) < 1e-9:
            seen = ": each token was rotated by its index in the sequence (0, 1, 2), not by token_positions"
        climb_failed(f"token_positions {POSITIONS.tolist()}: output off by up to {worst(got, want):.3g} (relative) "
                     f"from {ROTATION}, {ANGLE}{seen}", "the angles of token i are those of token_positions[i]: "
                     "cos[token_positions], sin[token_positions]")  # fmt: skip


@rung(8)
def test_rope_takes_token_positions_per_batch_entry():
    positions = torch.tensor([[5, 0, 17], [2, 9, 9]])
    got, want = rotate(X, positions), expected(X, positions)
    if worst(got, want) > EXACT:
        climb_failed(f"token_positions {positions.tolist()} of shape (2, 3) for x (2, 3, 6): output off by up to "
                     f"{worst(got, want):.3g}; batch entry b uses row b of the positions",
                     "index the tables with token_positions as given, (batch, seq) -> (batch, seq, d_k / 2)")  # fmt: skip


@rung(9)
def test_rope_dot_product_depends_only_on_the_offset():
    q, k = rand(1, 8, seed=5), rand(1, 8, seed=6)

    def dot(m: int, n: int) -> float:
        return float(rotate(q, torch.tensor([m]), max_seq_len=64) @ rotate(k, torch.tensor([n]), max_seq_len=64).T)

    near, far = dot(10, 3), dot(50, 43)
    # Each rotated vector rounds at ~1e-16 of its length; the two dots differ by rounding only.
    if abs(near - far) > EXACT * float(q.norm() * k.norm()):
        climb_failed(f"<RoPE(q, 10), RoPE(k, 3)> = {near:.10g} but <RoPE(q, 50), RoPE(k, 43)> = {far:.10g}: the "
                     "same offset 7 gave different dot products", f"q and k rotated alike: {ROTATION}, {ANGLE}")  # fmt: skip


@rung(10)
def test_rope_computes_bfloat16_in_float32():
    x = rand(1, 16, 8, seed=7, std=3.0).to(torch.bfloat16)
    positions = torch.arange(40, 56)
    out = rotate(x, positions, max_seq_len=64)
    if out.dtype != torch.bfloat16:
        climb_failed(f"bfloat16 x gave dtype {out.dtype}", "return x's dtype: compute in float32, cast back once")
    exact = expected(x.double(), positions)
    pairs = x.double().unflatten(-1, (4, 2)).abs().sum(-1).repeat_interleave(2, dim=-1)
    # Computed in float32 and rounded once: within half a bfloat16 ulp of the exact rotation, plus
    # float32's rounding of the angles' cos, sin and two products (a few 2^-24 of |x0| + |x1|).
    ulp = torch.exp2(torch.floor(torch.log2(exact.abs().clamp(min=2.0**-126))) - 7)
    bound = ulp / 2 + 8 * 2.0**-24 * pairs
    bad = (out.double() - exact).abs() > bound
    if bad.any():
        i = tuple(bad.nonzero()[0].tolist())
        climb_failed(f"bfloat16 x at positions 40..55: {int(bad.sum())} of {bad.numel()} outputs are not the exact "
                     f"rotation rounded once, e.g. {float(out[i]):.6g} for {float(exact[i]):.6g}",
                     "the handout computes half types in float32: the tables (float64) and x go to float32, the "
                     "result back to x's dtype once at the end")  # fmt: skip
