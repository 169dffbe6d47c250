"""ffn_block, rung by rung: the output's shape and dtype; x itself when the FFN outputs zero (the
residual); the input left unchanged; x + ffn(ln2(x)), the FFN fed the normalised x (pre-norm),
with RMSNorm + SwiGLU and LayerNorm + the position-wise FFN; the config's eps reaching the norm;
bfloat16 in, bfloat16 out (tests/_ladder.py). Only `forward` is the block's own code, so the
expected outputs are built from the block's own `ln2` and `ffn` (their tests are `-k rmsnorm`,
`-k layernorm`, `-k swiglu`, `-k positionwise_ffn`): what fails here is how forward joins them."""

import torch

from cs336_basics.nn import FFNBlock, FFNBlockConfig, convert

from ._helpers import raised, rand
from ._ladder import climb_failed, rung
from .adapters import run_ffn_block

F64 = torch.float64
D_MODEL, D_FF = 4, 6
CONFIGS = {
    "RMSNorm + SwiGLU": dict(norm="rmsnorm", ffn="swiglu", activation="silu"),
    "LayerNorm + position-wise FFN with biases": dict(
        norm="layernorm", ffn="positionwise", activation="gelu", bias=True
    ),
}
FORWARD = "FFNBlock.forward: x + ffn(ln2(x)), with the block's own self.ln2 and self.ffn"


def block(settings: dict, dtype=F64, zero_ffn_output: bool = False, **overrides) -> FFNBlock:
    """An FFNBlock of these settings with seeded weights (the norm's gain near 1); with
    zero_ffn_output, the FFN's output weight (and bias) zero: the FFN then outputs zeros."""
    config = FFNBlockConfig(D_MODEL, D_FF, **{**settings, **overrides})
    try:
        module = FFNBlock(config, dtype=dtype)
    except Exception as e:  # noqa: BLE001 -- a part the block is built from raised
        climb_failed(f"FFNBlock({config}) raised while building its parts: {raised(e)}",
                     "FFNBlock.__init__ (given) builds ln2 and ffn from the norm and FFN modules: their own tests "
                     "(`-k rmsnorm`, `-k layernorm`, `-k swiglu`, `-k positionwise_ffn`) come first")  # fmt: skip
    with torch.no_grad():
        for i, (name, p) in enumerate(module.named_parameters()):
            p.copy_(rand(*p.shape, std=0.5, seed=10 + i, dtype=dtype) + (1.0 if name == "ln2.weight" else 0.0))
            if zero_ffn_output and name.startswith("ffn.w2."):
                p.zero_()
    return module


def call(module: FFNBlock, x: torch.Tensor, what: str) -> torch.Tensor:
    try:
        with torch.no_grad():
            return module(x)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"{what}, x of shape {tuple(x.shape)}: {raised(e)}", FORWARD)


def parts(module: FFNBlock, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ln2(x), ffn(ln2(x))) from the block's own modules."""
    with torch.no_grad():
        normed = module.ln2(x)
        return normed, module.ffn(normed)


def adapter(settings: dict, x: torch.Tensor) -> torch.Tensor:
    weights = convert.to_meta({k: v.detach() for k, v in block(settings, dtype=x.dtype).state_dict().items()})
    c = FFNBlockConfig(D_MODEL, D_FF, **settings)
    try:
        with torch.no_grad():
            return run_ffn_block(D_MODEL, D_FF, weights, x, c.norm, c.ffn, c.activation, c.eps, c.bias)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"run_ffn_block ({c.norm}, {c.ffn}), x {tuple(x.shape)} {x.dtype}: {raised(e)}", FORWARD)


@rung(1)
def test_ffn_block_output_has_the_input_s_shape_and_dtype():
    for what, settings in CONFIGS.items():
        for lead in ((), (3,), (2, 3)):
            x = rand(*lead, D_MODEL, seed=5)
            out = adapter(settings, x)
            if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != x.dtype:
                shown = f"{tuple(out.shape)} {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
                climb_failed(f"{what}: float64 x of shape {tuple(x.shape)} gave {shown}",
                             f"the output has x's shape and dtype: {FORWARD}")  # fmt: skip


@rung(2)
def test_ffn_block_adds_the_input_back():
    """With the FFN's output weight zero the FFN outputs 0, and x + 0 is x exactly."""
    x = rand(2, D_MODEL, std=3.0, mean=1.0, seed=6)
    for what, settings in CONFIGS.items():
        module = block(settings, zero_ffn_output=True)
        got = call(module, x.clone(), what)
        if torch.equal(got, x):
            continue
        normed, _ = parts(module, x)
        seen = {
            "0, the FFN's output alone: x is not added back": torch.zeros_like(x),
            "ln2(x), not x (the sum normalised, or the normalised x added back)": normed,
        }
        shown = next((f" = {w}" for w, v in seen.items() if torch.allclose(got, v, rtol=1e-12, atol=1e-300)), "")
        climb_failed(f"{what}, the FFN's output weight w2 zero (the FFN gives 0): the block returned "
                     f"{[round(v, 4) for v in got[0].tolist()]}{shown} for the row x = "
                     f"{[round(v, 4) for v in x[0].tolist()]}; x + 0 is x itself",
                     f"the residual adds x, as given and un-normalised, to the FFN's output: {FORWARD}")  # fmt: skip


@rung(3)
def test_ffn_block_leaves_its_input_unchanged():
    x = rand(2, D_MODEL, seed=7)
    given = x.clone()
    call(block(CONFIGS["RMSNorm + SwiGLU"]), x, "RMSNorm + SwiGLU")
    if not torch.equal(x, given):
        climb_failed("after the call the input x held other values: the block wrote into it",
                     "x + ffn(...) makes a new tensor; `x += ...` (or add_) writes into the caller's x")  # fmt: skip


@rung(4)
def test_ffn_block_is_x_plus_the_ffn_of_the_normalised_x():
    x = rand(3, D_MODEL, std=3.0, mean=1.0, seed=8)
    for what, settings in CONFIGS.items():
        module = block(settings)
        got = call(module, x.clone(), what)
        _, out = parts(module, x)
        want = x + out
        if bool((got - want).abs().le(2**-52 * (x.abs() + out.abs())).all()):  # the sum rounded once
            continue
        with torch.no_grad():
            unnormed = module.ffn(x)
        shown = " = x + ffn(x): the FFN got x, not ln2(x)" if torch.allclose(got, x + unnormed, rtol=1e-12) else ""
        err = float((got - want).abs().max())
        climb_failed(f"{what}: the output differs from x + ffn(ln2(x)) (the block's own ln2 and ffn) by up to "
                     f"{err:.3g}{shown}",
                     f"pre-norm: the FFN sees the normalised x, the residual adds x: {FORWARD}")  # fmt: skip


@rung(5)
def test_ffn_block_normalises_with_the_config_s_eps():
    """eps 0.5 against rows of mean square ~0.01: the norm's output, and the block's, change."""
    x = rand(3, D_MODEL, std=0.1, seed=9)
    for what, settings in CONFIGS.items():
        big, small = block(settings, eps=0.5), block(settings, eps=1e-5)  # the same weights
        got, default = call(big, x.clone(), f"{what}, eps 0.5"), call(small, x.clone(), f"{what}, eps 1e-5")
        if torch.allclose(got, default, rtol=1e-12, atol=0):
            climb_failed(f"{what}: eps = 0.5 and eps = 1e-5 gave the same output, for rows of mean square ~0.01 "
                         "where eps 0.5 changes the norm's output several-fold: eps does not reach the norm",
                         "the block's ln2 is built with FFNBlockConfig.eps; forward normalises with self.ln2, and "
                         "RMSNorm and LayerNorm use the eps they were given")  # fmt: skip
        _, out = parts(big, x)
        if not bool((got - (x + out)).abs().le(2**-52 * (x.abs() + out.abs())).all()):
            climb_failed(f"{what}, eps 0.5: the output differs from x + ffn(ln2(x)) (the block's own ln2, of eps 0.5)",
                         f"normalise with self.ln2, which holds the config's eps: {FORWARD}")  # fmt: skip


@rung(6)
def test_ffn_block_returns_bfloat16_for_bfloat16_input():
    for what, settings in CONFIGS.items():
        out = adapter(settings, rand(3, D_MODEL, seed=11, dtype=torch.bfloat16))
        if out.dtype != torch.bfloat16:
            climb_failed(f"{what}: bfloat16 x and weights gave a {out.dtype} output",
                         "return the input's dtype: the norm and the FFN each return their input's dtype, and the "
                         "residual sum stays in it")  # fmt: skip
