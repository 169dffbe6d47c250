"""The pre-norm decoder block against Hugging Face's LlamaDecoderLayer and against the
CS336 adapter's formula written with built-ins; its ablations (post-norm, no norm, the SiLU FFN)
against their formulas written with built-ins. Tolerances: tests/floors.py ("block.*"), the
floors measured by measure_floors below (seeds 0-19)."""

import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import TransformerBlock

from . import adapters, oracles
from ._helpers import F64, assert_close, rand
from .adapters import run_transformer_block
from .floors import MaxErrors, tol

F32 = torch.float32
D, H, SEQ, THETA, MAX_LEN, EPS = 48, 136, 9, 500.0, 64, 1e-5


@pytest.mark.parametrize("case", fixture_names("block"))
def test_block_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)  # CS336's block or an ablation


def cs336_weights(num_kv_heads=2, seed=0, dtype=F64):
    d_kv = D // 4 * num_kv_heads
    shapes = {"attn.q_proj.weight": (D, D), "attn.k_proj.weight": (d_kv, D), "attn.v_proj.weight": (d_kv, D),
              "attn.output_proj.weight": (D, D), "ffn.w1.weight": (H, D), "ffn.w2.weight": (D, H), "ffn.w3.weight": (H, D)}  # fmt: skip
    w = {k: rand(*s, std=0.3, seed=seed + i, dtype=dtype) for i, (k, s) in enumerate(shapes.items())}
    w |= {
        n: rand(D, std=0.5, mean=1.0, seed=seed + 50 + i, dtype=dtype)
        for i, n in enumerate(("ln1.weight", "ln2.weight"))
    }
    return w


def builtin_block(w, x):
    """x + MHA(RMSNorm(x)); then + SwiGLU(RMSNorm(.)), with F.rms_norm, F.linear, F.silu, F.sdpa."""
    rope = lambda t, p: oracles.rope_complex(t, THETA, p)  # noqa: E731
    h = x + oracles.mha(TF.rms_norm(x, (D,), w["ln1.weight"], EPS), w["attn.q_proj.weight"], w["attn.k_proj.weight"],
                        w["attn.v_proj.weight"], w["attn.output_proj.weight"], 4, rope)  # fmt: skip
    return h + oracles.swiglu_ffn(
        TF.rms_norm(h, (D,), w["ln2.weight"], EPS), w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"]
    )


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1], ids=["mh", "gq", "mq"])
def test_block_adapter_matches_builtins(num_kv_heads):
    w, x = cs336_weights(num_kv_heads), rand(2, SEQ, D, seed=7)
    assert_close(
        run_transformer_block(D, 4, H, MAX_LEN, THETA, w, x),
        builtin_block(w, x),
        tol("block.f64"),
        "block vs built-ins",
    )


def test_block_state_dict_keys_follow_cs336():
    keys = set(TransformerBlock(D, 4, H, MAX_LEN, THETA).state_dict())
    assert keys == set(cs336_weights(4))


# The ablations (CS336 section 7.3) as settings of the layer, each against its formula written
# with built-ins: post-norm h = RMSNorm(x + attn(x)), out = RMSNorm(h + ffn(h)); no norm; the SiLU FFN.
ABLATIONS = [("post", "swiglu"), ("none", "swiglu"), ("pre", "silu"), ("post", "silu")]
H_SILU = 4 * D  # the SiLU FFN's width: d_ff = 4 d_model
FFN_IDS = {"swiglu": "gated_ffn", "silu": "ungated_ffn"}  # ids naming no other component (-k silu)


def ablation_weights(norm: str, ffn: str, seed=0) -> dict:
    w = cs336_weights(4, seed)
    if ffn == "silu":
        del w["ffn.w3.weight"]
        w["ffn.w1.weight"] = rand(H_SILU, D, std=0.3, seed=seed + 20)
        w["ffn.w2.weight"] = rand(D, H_SILU, std=0.3, seed=seed + 21)
    if norm == "none":
        del w["ln1.weight"], w["ln2.weight"]
    return w


def builtin_ablated_block(w, x, norm: str, ffn: str):
    """The layer of `norm` and `ffn` with F.rms_norm, F.linear, F.silu and F.sdpa."""

    def rms(t, name):
        return t if norm == "none" else TF.rms_norm(t, (D,), w[name], EPS)

    def attn(t):
        return oracles.mha(t, w["attn.q_proj.weight"], w["attn.k_proj.weight"], w["attn.v_proj.weight"],
                           w["attn.output_proj.weight"], 4, lambda q, p: oracles.rope_complex(q, THETA, p))  # fmt: skip

    def feed_forward(t):
        if ffn == "silu":
            return TF.linear(TF.silu(TF.linear(t, w["ffn.w1.weight"])), w["ffn.w2.weight"])
        return oracles.swiglu_ffn(t, w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])

    if norm == "post":
        h = rms(x + attn(x), "ln1.weight")
        return rms(h + feed_forward(h), "ln2.weight")
    h = x + attn(rms(x, "ln1.weight"))
    return h + feed_forward(rms(h, "ln2.weight"))


def ablated_block(w, norm: str, ffn: str) -> TransformerBlock:
    d_ff = H_SILU if ffn == "silu" else H
    block = TransformerBlock(D, 4, d_ff, MAX_LEN, THETA, norm=norm, ffn=ffn, dtype=F64)
    block.load_state_dict(w)  # strict: the variant's parameters are exactly these
    return block


@pytest.mark.parametrize(("norm", "ffn"), ABLATIONS, ids=[f"{n}_norm-{FFN_IDS[f]}" for n, f in ABLATIONS])
def test_block_ablation_matches_its_formula_in_builtins(norm, ffn):
    w, x = ablation_weights(norm, ffn), rand(2, SEQ, D, seed=7)
    with torch.no_grad():
        actual = ablated_block(w, norm, ffn)(x)
    assert_close(actual, builtin_ablated_block(w, x, norm, ffn), tol("block.ablations"), f"{norm}-norm {ffn} block")


def test_block_without_norms_has_no_norm_weights():
    keys = set(TransformerBlock(D, 4, H, MAX_LEN, THETA, norm="none").state_dict())
    assert keys == set(cs336_weights(4)) - {"ln1.weight", "ln2.weight"}


def test_block_passes_its_eps_to_both_norms():
    block = TransformerBlock(D, 4, H, MAX_LEN, THETA, eps=1e-2)
    assert (block.ln1.eps, block.ln2.eps) == (1e-2, 1e-2)


def test_block_ungated_ffn_has_two_d_model_by_d_ff_matrices():
    ffn = TransformerBlock(D, 4, H_SILU, MAX_LEN, THETA, ffn="silu").ffn
    shapes = {k: tuple(v.shape) for k, v in ffn.state_dict().items()}
    assert shapes == {"w1.weight": (H_SILU, D), "w2.weight": (D, H_SILU)}  # 2 d_model d_ff = 8 d_model^2


@pytest.mark.parametrize(("setting", "value"), [("norm", "layer"), ("ffn", "mlp")])
def test_block_unknown_ablation_names_the_setting(setting, value):
    with pytest.raises(ValueError, match=f"{setting} must be one of .*got '{value}'"):
        TransformerBlock(D, 4, H, MAX_LEN, THETA, **{setting: value})


def measure_floors(seeds=range(20)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above."""
    floors = MaxErrors()
    for seed in seeds:
        for kv in (4, 2, 1):
            w, x = cs336_weights(kv, seed), rand(2, SEQ, D, seed=seed + 7)
            floors.keep("block.f64", run_transformer_block(D, 4, H, MAX_LEN, THETA, w, x), builtin_block(w, x))
        for norm, ffn in ABLATIONS:
            w, x = ablation_weights(norm, ffn, seed), rand(2, SEQ, D, seed=seed + 7)
            with torch.no_grad():
                floors.keep("block.ablations", ablated_block(w, norm, ffn)(x), builtin_ablated_block(w, x, norm, ffn))
    return floors
