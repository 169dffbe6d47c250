"""swiglu, rung by rung: the output's shape and dtype; one unit's output by hand, W2 (SiLU(W1 x)
* W3 x) with every weight 1 at x = 2; each position computed alone; W3 x the plain factor and
W1 x the gated one; the `activation` argument (GeGLU and the others); bfloat16 in, bfloat16 out
(tests/_ladder.py). Expected values are computed here with math in float64; a correct
implementation rounds a handful of times, so they agree to ~1e-15 relative, and 1e-12 is far
below the nearest wrong formula's 1e-2."""

import math

import torch

from cs336_basics.nn import SwiGLUFFN, convert

from ._helpers import raised, rand
from ._ladder import climb_failed, rung
from .adapters import run_swiglu

F64 = torch.float64
D_MODEL, D_FF = 3, 5
REL = 1e-12  # a few float64 roundings of a well-conditioned formula, with room to spare
SHAPES = "SwiGLUFFN.__init__: w1 and w3 are Linear(d_model, d_ff) (weights (d_ff, d_model)), w2 Linear(d_ff, d_model)"


def sigmoid(v: float) -> float:
    return 1 / (1 + math.exp(-v))


def gelu(v: float) -> float:
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


def gelu_tanh(v: float) -> float:
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))


ACT = {"silu": lambda v: v * sigmoid(v), "gelu": gelu, "gelu_tanh": gelu_tanh, "relu": lambda v: max(v, 0.0)}


def weights(seed: int = 0, dtype=F64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """w1 (5, 3), w2 (3, 5), w3 (5, 3)."""
    return (rand(D_FF, D_MODEL, seed=seed, dtype=dtype), rand(D_MODEL, D_FF, std=0.5, seed=seed + 1, dtype=dtype),
            rand(D_FF, D_MODEL, seed=seed + 2, dtype=dtype))  # fmt: skip


def ffn(x, w1, w2, w3) -> torch.Tensor:
    """run_swiglu, its exception turned into the rung's failure."""
    d_ff, d_model = w1.shape
    try:
        with torch.no_grad():
            return run_swiglu(d_model, d_ff, w1, w2, w3, x)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"x {tuple(x.shape)}, w1 and w3 {tuple(w1.shape)}, w2 {tuple(w2.shape)}: {raised(e)}",
                     f"{SHAPES}; linear(x, W) = x @ W.T over the last dimension, whatever the leading ones")  # fmt: skip


def unit(x: float, w1: float = 1.0, w2: float = 1.0, w3: float = 1.0, activation: str | None = None) -> float:
    """The output of d_model = d_ff = 1 with these scalar weights at x: through run_swiglu, or
    through SwiGLUFFN(1, 1, activation=...) when an activation is named."""
    xs, ws = torch.tensor([x], dtype=F64), [torch.tensor([[w]], dtype=F64) for w in (w1, w2, w3)]
    if activation is None:
        return float(ffn(xs, *ws))
    try:
        loaded = convert.load_state_dict(
            SwiGLUFFN(1, 1, activation=activation, dtype=F64), {f"w{i}.weight": w for i, w in enumerate(ws, 1)}
        )
        with torch.no_grad():
            return float(loaded(xs))
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"SwiGLUFFN(1, 1, activation={activation!r}) at x = {x}: {raised(e)}", SHAPES)


@rung(1)
def test_swiglu_output_has_the_input_s_shape_and_dtype():
    w1, w2, w3 = weights()
    for lead in ((), (4,), (2, 3, 2)):
        x = rand(*lead, D_MODEL, seed=5)
        out = ffn(x, w1, w2, w3)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != x.dtype:
            shown = f"{tuple(out.shape)} {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(f"float64 x of shape {tuple(x.shape)} (d_model 3, d_ff 5) gave {shown}",
                         "the output has x's shape (..., d_model) and dtype: W2 maps the d_ff hidden units back to "
                         "d_model, and nothing converts the dtype")  # fmt: skip


@rung(2)
def test_swiglu_of_one_unit_by_hand():
    got, want = unit(2.0), 2 * ACT["silu"](2.0)
    if abs(got - want) <= REL * want:
        return
    s = ACT["silu"]
    shown = {
        s(2.0): "SiLU(2) = 2 sigmoid(2), half of it: the factor W3 x is missing, or the gate is sigmoid(W1 x), "
        "not SiLU(W1 x) = W1 x sigmoid(W1 x)",
        sigmoid(2.0): "sigmoid(2): sigmoid(W1 x) alone",
        2 * gelu(2.0): "2 GELU(2): the gate is GELU (x Phi(x)), not SiLU (x sigmoid(x))",
        2 * gelu_tanh(2.0): "2 GELU(2) in its tanh form: the gate is GELU, not SiLU",
        s(2.0) ** 2: "SiLU(2)^2: the plain factor W3 x went through SiLU too",
        s(4.0): "SiLU(4) = SiLU(W1 x * W3 x): SiLU after the product instead of on W1 x alone",
        4.0: "W1 x * W3 x = 4: no nonlinearity acted at 2 (none at all, or ReLU)",
    }
    seen = next((f" = {what}" for v, what in shown.items() if abs(got - v) <= 1e-9 * v), "")
    climb_failed(f"d_model = d_ff = 1, every weight 1, x = 2: output {got:.10g}{seen}; expected "
                 f"W2 (SiLU(W1 x) * W3 x) = 2 SiLU(2) = 4 sigmoid(2) = {want:.10g}",
                 "swiglu_ffn: the gate SiLU(W1 x) = (W1 x) sigmoid(W1 x) (get_activation(activation), SiLU by "
                 "default; if `-k silu` fails, fix silu first), times W3 x, then W2")  # fmt: skip


@rung(3)
def test_swiglu_computes_each_position_alone():
    w1, w2, w3 = weights()
    x = rand(2, 3, D_MODEL, seed=6)
    out = ffn(x, w1, w2, w3)
    alone = torch.stack([ffn(row, w1, w2, w3) for row in x.reshape(-1, D_MODEL)]).reshape(out.shape)
    err = float((out - alone).abs().max())
    if err > REL * float(alone.abs().max()):
        climb_failed(f"x of shape (2, 3, 3): the outputs differ from each position's computed alone (x[i, j] of "
                     f"shape (3,)) by up to {err:.3g}",
                     "every operation acts on the last dimension only (d_model, then d_ff, then d_model): the "
                     "leading dimensions are positions, never reshaped, transposed or summed over")  # fmt: skip


@rung(4)
def test_swiglu_output_is_proportional_to_w3():
    """W3 x is the plain factor: doubling w3 doubles the output, exactly (a power of 2)."""
    w1, w2, w3 = weights()
    x = rand(D_MODEL, seed=7)
    out = ffn(x, w1, w2, w3)
    doubled = ffn(x, w1, w2, 2 * w3)
    if torch.allclose(doubled, 2 * out, rtol=REL, atol=0):
        return
    if torch.allclose(ffn(x, 2 * w1, w2, w3), 2 * out, rtol=REL, atol=0):
        climb_failed("doubling w3 did not double the output, doubling w1 did: the activation gates W3 x and W1 x is "
                     "the plain factor (w1 and w3 swapped)",
                     "swiglu_ffn: act(W1 x) * W3 x, with w1 the gate (d_ff, d_model) and w3 the up projection; "
                     "and SwiGLUFFN.forward passes self.w1, self.w2, self.w3 in that order")  # fmt: skip
    ratios = [round(v, 4) for v in (doubled / out).tolist()]
    climb_failed(f"doubling w3 multiplied the three outputs by {ratios}, not 2: W3 x is not a plain factor",
                 "swiglu_ffn: W2 (act(W1 x) * W3 x): W3 x multiplies the gate as it is, through no function")  # fmt: skip


@rung(5)
def test_swiglu_gates_with_its_activation_argument():
    for name in ("gelu", "gelu_tanh", "relu"):
        got, want = unit(2.0, activation=name), 2 * ACT[name](2.0)
        if abs(got - want) > REL * want:
            default = abs(got - 2 * ACT["silu"](2.0)) <= REL * got
            silu = " = 2 SiLU(2), the default gate's: the argument was not used" if default else ""
            climb_failed(f"SwiGLUFFN(1, 1, activation={name!r}), every weight 1, x = 2: output {got:.10g}{silu}; "
                         f"expected 2 {name}(2) = {want:.10g}",
                         "SwiGLUFFN.forward passes self.activation to swiglu_ffn, which gates with "
                         "get_activation(activation)(W1 x)")  # fmt: skip


@rung(6)
def test_swiglu_returns_bfloat16_for_bfloat16_input():
    w1, w2, w3 = weights(dtype=torch.bfloat16)
    out = ffn(rand(4, D_MODEL, seed=8, dtype=torch.bfloat16), w1, w2, w3)
    if out.dtype != torch.bfloat16:
        climb_failed(f"bfloat16 x and weights gave a {out.dtype} output",
                     "return the input's dtype: matrix products run in it, and the activation computes in float32 "
                     "and casts back")  # fmt: skip
