"""positionwise_ffn, rung by rung: the output's shape and dtype; one unit's output by hand,
act(x W1^T + b1) W2^T + b2 with GELU, weights 1 and no bias, at x = 2; each position computed
alone; b2 added to the output; b1 added before the activation; the `activation` argument; the
module with bias=False; bfloat16 in, bfloat16 out (tests/_ladder.py). Expected values are
computed here with math in float64; a correct implementation rounds a handful of times, so
they agree to ~1e-15 relative, and 1e-12 is far below the nearest wrong formula's 1e-2."""

import math

import torch

from cs336_basics.nn import PositionWiseFFN, convert

from ._helpers import raised, rand
from ._ladder import climb_failed, rung
from .adapters import run_positionwise_feedforward

F64 = torch.float64
D_MODEL, D_FF = 3, 5
REL = 1e-12  # a few float64 roundings of a well-conditioned formula, with room to spare
SHAPES = ("PositionWiseFFN.__init__: w1 = Linear(d_model, d_ff), w2 = Linear(d_ff, d_model), each with a bias when "
          "bias=True; positionwise_ffn: linear(x, W, b) = x @ W.T + b over the last dimension")  # fmt: skip


def sigmoid(v: float) -> float:
    return 1 / (1 + math.exp(-v))


def gelu(v: float) -> float:
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


def gelu_tanh(v: float) -> float:
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))


ACT = {"gelu": gelu, "gelu_tanh": gelu_tanh, "silu": lambda v: v * sigmoid(v), "relu": lambda v: max(v, 0.0)}


def params(seed: int = 0, dtype=F64) -> tuple[torch.Tensor, ...]:
    """w1 (5, 3), b1 (5,), w2 (3, 5), b2 (3,)."""
    return (rand(D_FF, D_MODEL, seed=seed, dtype=dtype), rand(D_FF, std=0.5, seed=seed + 1, dtype=dtype),
            rand(D_MODEL, D_FF, std=0.5, seed=seed + 2, dtype=dtype), rand(D_MODEL, seed=seed + 3, dtype=dtype))  # fmt: skip


def ffn(x, w1, b1, w2, b2, activation: str = "gelu") -> torch.Tensor:
    """run_positionwise_feedforward, its exception turned into the rung's failure."""
    d_ff, d_model = w1.shape
    try:
        with torch.no_grad():
            return run_positionwise_feedforward(d_model, d_ff, w1, b1, w2, b2, x, activation)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"x {tuple(x.shape)}, w1 {tuple(w1.shape)}, b1 {tuple(b1.shape)}, w2 {tuple(w2.shape)}, "
                     f"b2 {tuple(b2.shape)}, activation {activation!r}: {raised(e)}", SHAPES)  # fmt: skip


def unit(x: float, b1: float = 0.0, activation: str = "gelu") -> float:
    """The output of d_model = d_ff = 1, w1 = w2 = 1, b2 = 0 at x."""
    one = torch.ones(1, 1, dtype=F64)
    return float(ffn(torch.tensor([x], dtype=F64), one, torch.tensor([b1], dtype=F64), one, torch.zeros(1, dtype=F64),
                     activation))  # fmt: skip


@rung(1)
def test_positionwise_ffn_output_has_the_input_s_shape_and_dtype():
    w1, b1, w2, b2 = params()
    for lead in ((), (4,), (2, 3, 2)):
        x = rand(*lead, D_MODEL, seed=5)
        out = ffn(x, w1, b1, w2, b2)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != x.dtype:
            shown = f"{tuple(out.shape)} {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(f"float64 x of shape {tuple(x.shape)} (d_model 3, d_ff 5) gave {shown}",
                         "the output has x's shape (..., d_model) and dtype: W2 maps the d_ff hidden units back to "
                         "d_model, and nothing converts the dtype")  # fmt: skip


@rung(2)
def test_positionwise_ffn_of_one_unit_by_hand():
    got, want = unit(2.0), gelu(2.0)
    if abs(got - want) <= REL * want:
        return
    shown = {
        2.0: "x itself: no nonlinearity acted at 2 (ReLU, or none)",
        ACT["silu"](2.0): "SiLU(2)",
        gelu_tanh(2.0): "GELU(2) in its tanh form, where the exact (erf) GELU belongs",
        sigmoid(2.0): "sigmoid(2)",
    }
    seen = next((f" = {what}" for v, what in shown.items() if abs(got - v) <= 1e-9 * v), "")
    climb_failed(f"d_model = d_ff = 1, w1 = w2 = 1, b1 = b2 = 0, activation 'gelu', x = 2: output {got:.10g}{seen}; "
                 f"expected GELU(2) = 0.5 * 2 * (1 + erf(2 / sqrt(2))) = {want:.10g}",
                 "positionwise_ffn: act(x W1^T + b1) W2^T + b2 with act = get_activation(activation) (if `-k gelu` "
                 "fails, fix gelu first)")  # fmt: skip


@rung(3)
def test_positionwise_ffn_computes_each_position_alone():
    w1, b1, w2, b2 = params()
    x = rand(2, 3, D_MODEL, seed=6)
    out = ffn(x, w1, b1, w2, b2)
    alone = torch.stack([ffn(row, w1, b1, w2, b2) for row in x.reshape(-1, D_MODEL)]).reshape(out.shape)
    err = float((out - alone).abs().max())
    if err > REL * float(alone.abs().max()):
        climb_failed(f"x of shape (2, 3, 3): the outputs differ from each position's computed alone (x[i, j] of "
                     f"shape (3,)) by up to {err:.3g}",
                     "every operation acts on the last dimension only (d_model, then d_ff, then d_model): the "
                     "leading dimensions are positions, never reshaped, transposed or summed over")  # fmt: skip


@rung(4)
def test_positionwise_ffn_adds_b2_to_the_output():
    w1, b1, w2, b2 = params()
    x, shift = rand(D_MODEL, seed=7), torch.tensor([1.0, -2.0, 0.5], dtype=F64)
    out, moved = ffn(x, w1, b1, w2, b2), ffn(x, w1, b1, w2, b2 + shift)
    bound = 4 * 2**-53 * (out.abs() + moved.abs())  # each output rounded once, as is their difference
    if bool(((moved - out) - shift).abs().le(bound).all()):
        return
    changed = [round(v, 6) for v in (moved - out).tolist()]
    none = ": b2 does not reach the output" if changed == [0.0, 0.0, 0.0] else ""
    climb_failed(f"adding (1, -2, 0.5) to b2 changed the output by {changed}, not by (1, -2, 0.5){none}",
                 "positionwise_ffn: b2 is added to the output of W2, last: act(x W1^T + b1) W2^T + b2")  # fmt: skip


@rung(5)
def test_positionwise_ffn_adds_b1_before_the_activation():
    """At x = 0 the hidden unit is act(b1), whatever W1."""
    for b1 in (2.0, 0.5, -3.0):  # 2 first: rung 2 saw act(2) = GELU(2), so 2 or 0 there is b1 misplaced
        got, want = unit(0.0, b1), gelu(b1)
        if abs(got - want) > REL * abs(want):
            seen = {b1: ": b1 itself, past the activation", 0.0: ": b1 does not reach the output"}
            shown = next((what for v, what in seen.items() if abs(got - v) <= 1e-9 * abs(v)), "")
            climb_failed(f"d_model = d_ff = 1, w1 = w2 = 1, b2 = 0, x = 0, b1 = {b1}: output {got:.10g}{shown}; "
                         f"expected GELU(b1) = {want:.10g}",
                         "positionwise_ffn: b1 is added to x W1^T before the activation: act(x W1^T + b1)")  # fmt: skip


@rung(6)
def test_positionwise_ffn_uses_its_activation_argument():
    for name in ("relu", "silu", "gelu_tanh"):
        got, want = (unit(-1.0, activation=name), unit(2.0, activation=name)), (ACT[name](-1.0), ACT[name](2.0))
        if any(abs(g - w) > REL * abs(w) for g, w in zip(got, want, strict=True)):
            ignored = all(abs(g - gelu(v)) <= REL * abs(gelu(v)) for g, v in zip(got, (-1.0, 2.0), strict=True))
            seen = " = GELU's: the argument was not used" if ignored else ""
            climb_failed(f"activation {name!r}, d_model = d_ff = 1, weights 1, no bias: outputs at x = -1 and 2 "
                         f"{[round(g, 8) for g in got]}{seen}; expected {name}(x) = {[round(w, 8) for w in want]}",
                         "PositionWiseFFN.forward passes self.activation to positionwise_ffn, which applies "
                         "get_activation(activation) to the hidden units")  # fmt: skip


@rung(7)
def test_positionwise_ffn_module_without_biases():
    w1, _, w2, _ = params()
    x = rand(4, D_MODEL, seed=8)
    try:
        module = convert.load_state_dict(PositionWiseFFN(D_MODEL, D_FF, bias=False, dtype=F64),
                                         {"w1.weight": w1, "w2.weight": w2})  # fmt: skip
        with torch.no_grad():
            got = module(x)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"PositionWiseFFN(3, 5, bias=False) loaded with w1.weight and w2.weight only: {raised(e)}",
                     "bias=False builds Linear(..., bias=False), with no bias parameter (its bias is None), and "
                     "positionwise_ffn and linear skip a bias that is None")  # fmt: skip
    zero = ffn(x, w1, torch.zeros(D_FF, dtype=F64), w2, torch.zeros(D_MODEL, dtype=F64))
    err = float((got - zero).abs().max())
    if err > REL * float(zero.abs().max()):
        climb_failed(f"PositionWiseFFN(bias=False) differs by up to {err:.3g} from the same weights with zero biases",
                     "with bias=False there is no bias: act(x W1^T) W2^T")  # fmt: skip


@rung(8)
def test_positionwise_ffn_returns_bfloat16_for_bfloat16_input():
    out = ffn(rand(4, D_MODEL, seed=9, dtype=torch.bfloat16), *params(dtype=torch.bfloat16))
    if out.dtype != torch.bfloat16:
        climb_failed(f"bfloat16 x, weights and biases gave a {out.dtype} output",
                     "return the input's dtype: matrix products run in it, and the activation computes in float32 "
                     "and casts back")  # fmt: skip
