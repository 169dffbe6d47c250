"""Oracles no one here wrote: Hugging Face transformers' own modules, built from a tiny config
(never downloaded), their weights copied into ours through cs336_basics.nn.convert.

Tolerances: tests/floors.py (the "*.hf*", "*.gpt_neox*" and "*.gpt2*" entries), the floors
measured by measure_floors below (seeds 0-49 x the three input shapes).
"""

import copy
from types import SimpleNamespace

import pytest
import torch

from cs336_basics.nn import FFNBlock, FFNBlockConfig, PositionWiseFFN, RMSNorm, SwiGLUFFN, convert
from cs336_basics.nn import functional as F
from cs336_basics.testing import compare

from .._helpers import assert_close, rand
from ..floors import MaxErrors, tol

pytestmark = pytest.mark.slow  # second tier: Hugging Face transformers' modules over many seeds

D, H, EPS = 48, 136, 1e-3  # a large eps, so that a module that ignores the config's eps fails
SHAPES = {"1d": (D,), "3d": (2, 5, D), "4d": (2, 3, 4, D)}
F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16

# floors.FLOORS entry of each comparison, by dtype
FLOOR_NAMES = {
    "swiglu": {F32: "swiglu.hf", F64: "swiglu.hf_f64"},
    "gpt_neox": {F32: "positionwise_ffn.gpt_neox", F64: "positionwise_ffn.gpt_neox_f64"},
    "gpt2": {F32: "positionwise_ffn.gpt2", F64: "positionwise_ffn.gpt2_f64"},
}


def import_hf() -> SimpleNamespace:
    import transformers
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXMLP
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaMLP, LlamaRMSNorm

    return SimpleNamespace(
        transformers=transformers,
        LlamaMLP=LlamaMLP,
        LlamaRMSNorm=LlamaRMSNorm,
        LlamaDecoderLayer=LlamaDecoderLayer,
        GPTNeoXMLP=GPTNeoXMLP,
        GPT2MLP=GPT2MLP,
    )


@pytest.fixture(scope="module")
def hf():
    """transformers' classes, imported once (2-3 s) and only when a test here runs."""
    return import_hf()


def llama_config(hf):
    return hf.transformers.LlamaConfig(
        hidden_size=D, intermediate_size=H, hidden_act="silu", rms_norm_eps=EPS,
        num_attention_heads=4, num_key_value_heads=4, vocab_size=32,
    )  # fmt: skip


def seeded(seed: int, build):
    """build() under torch.manual_seed(seed), leaving the global RNG as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build()


def hf_llama_mlp(hf, seed: int = 0):
    return seeded(seed, lambda: hf.LlamaMLP(llama_config(hf)))


def hf_llama_rmsnorm(hf, seed: int = 0):
    def build():
        norm = hf.LlamaRMSNorm(D, eps=EPS)
        with torch.no_grad():
            norm.weight.copy_(1 + 0.5 * torch.randn(D))  # a non-unit gain
        return norm

    return seeded(seed, build)


def hf_llama_layer(hf, seed: int = 0):
    def build():
        layer = hf.LlamaDecoderLayer(llama_config(hf), layer_idx=0)
        with torch.no_grad():
            layer.post_attention_layernorm.weight.copy_(1 + 0.5 * torch.randn(D))
        return layer

    return seeded(seed, build)


def ffn_part(state_dict: dict) -> dict:
    """The keys of a Llama decoder layer that belong to its FFN sub-block."""
    return {k: v for k, v in state_dict.items() if k.startswith(("mlp.", "post_attention_layernorm."))}


def gpt_neox_config(hf):
    return hf.transformers.GPTNeoXConfig(hidden_size=D, intermediate_size=H, hidden_act="gelu", num_attention_heads=4)


def gpt2_config(hf):
    return hf.transformers.GPT2Config(n_embd=D, activation_function="gelu_new")


def hf_gpt_neox_mlp(hf, seed: int = 0):
    return seeded(seed, lambda: hf.GPTNeoXMLP(gpt_neox_config(hf)))  # nn.Linear init: nonzero biases


def hf_gpt2_mlp(hf, seed: int = 0):
    def build():
        mlp = hf.GPT2MLP(H, gpt2_config(hf)).eval()  # eval: no dropout
        with torch.no_grad():  # Conv1D starts with std 0.02 weights and zero biases: too tame
            for conv in (mlp.c_fc, mlp.c_proj):
                conv.weight.normal_(std=0.2)
                conv.bias.normal_(std=0.5)
        return mlp

    return seeded(seed, build)


def ours_from(hf_module, ours, arch: str = "llama"):
    return convert.load_state_dict(ours, hf_module.state_dict(), naming="hf", arch=arch)


def x_of(shape_id: str, dtype=F32, seed: int = 1):
    return rand(*SHAPES[shape_id], std=2.0, mean=-0.3, seed=seed, dtype=dtype)


def check_against(ours, theirs, x, tol: float, what: str) -> None:
    with torch.no_grad():
        assert_close(ours(x), theirs(x), tol, what)


# --- SwiGLU and RMSNorm vs Llama ------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_swiglu_matches_hf_llama_mlp(hf, shape):
    mlp = hf_llama_mlp(hf)
    ours = ours_from(mlp, SwiGLUFFN(D, H, activation=convert.activation_from_hf(mlp.config.hidden_act)))
    check_against(ours, mlp, x_of(shape), tol("swiglu.hf"), f"SwiGLUFFN vs LlamaMLP, x {SHAPES[shape]}")


@pytest.mark.parametrize("shape", SHAPES)
def test_swiglu_matches_hf_llama_mlp_in_float64(hf, shape):
    mlp = hf_llama_mlp(hf).double()
    ours = ours_from(mlp, SwiGLUFFN(D, H, dtype=F64))
    check_against(ours, mlp, x_of(shape, F64), tol("swiglu.hf_f64"), "SwiGLUFFN vs LlamaMLP in float64")


@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm_matches_hf_llama_rmsnorm(hf, shape):
    # float32 only: LlamaRMSNorm computes in float32 even for float64 input.
    norm = hf_llama_rmsnorm(hf)
    ours = ours_from(norm, RMSNorm(D, eps=norm.variance_epsilon))
    check_against(ours, norm, x_of(shape), tol("rmsnorm.hf"), f"RMSNorm vs LlamaRMSNorm, x {SHAPES[shape]}")


def test_rmsnorm_cast_before_gain_matches_hf_llama_rmsnorm_bitwise_in_bfloat16(hf):
    norm = hf_llama_rmsnorm(hf).to(BF16)  # a bfloat16 checkpoint: the gain is bfloat16 too
    x = rand(4, 7, D, std=2.0, mean=-0.3, seed=3, dtype=BF16)
    with torch.no_grad():
        expected = norm(x)
    actual = F.rmsnorm(x, norm.weight.detach(), EPS, cast_before_gain=True)
    assert expected.dtype == BF16
    assert torch.equal(actual, expected), f"{int((actual != expected).sum())} of {x.numel()} elements differ"


def test_rmsnorm_default_cast_order_differs_from_hf_llama_rmsnorm_in_bfloat16(hf):
    """One rounding (ours, CS336) vs two (HF): some bfloat16 outputs differ by an ulp, which is
    what makes the bitwise test above sensitive to cast_before_gain."""
    norm = hf_llama_rmsnorm(hf).to(BF16)
    x = rand(4, 7, D, std=2.0, mean=-0.3, seed=3, dtype=BF16)
    with torch.no_grad():
        expected = norm(x)
    assert not torch.equal(F.rmsnorm(x, norm.weight.detach(), EPS), expected)


@pytest.mark.parametrize("shape", SHAPES)
def test_ffn_block_loads_hf_llama_names(hf, shape):
    layer = hf_llama_layer(hf)
    config = FFNBlockConfig(d_model=D, d_ff=H, eps=layer.post_attention_layernorm.variance_epsilon)
    block = convert.load_state_dict(FFNBlock(config), ffn_part(layer.state_dict()), naming="hf")
    x = x_of(shape)
    with torch.no_grad():
        expected = x + layer.mlp(layer.post_attention_layernorm(x))
        assert_close(block(x), expected, tol("ffn_block.hf"), "FFNBlock vs x + LlamaMLP(LlamaRMSNorm(x))")


# --- PositionWiseFFN (GELU) vs GPT-NeoX and GPT-2 --------------------------------------------


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_positionwise_ffn_matches_hf_gpt_neox_mlp(hf, shape, dtype):
    mlp = hf_gpt_neox_mlp(hf).to(dtype)
    activation = convert.activation_from_hf(gpt_neox_config(hf).hidden_act)  # "gelu": exact, erf
    ours = ours_from(mlp, PositionWiseFFN(D, H, activation=activation, dtype=dtype), arch="gpt_neox")
    check_against(
        ours, mlp, x_of(shape, dtype), tol(FLOOR_NAMES["gpt_neox"][dtype]), f"PositionWiseFFN vs GPTNeoXMLP, {dtype}"
    )


@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_positionwise_ffn_matches_hf_gpt2_mlp(hf, shape, dtype):
    mlp = hf_gpt2_mlp(hf).to(dtype)
    activation = convert.activation_from_hf(gpt2_config(hf).activation_function)  # "gelu_new": tanh
    ours = ours_from(mlp, PositionWiseFFN(D, H, activation=activation, dtype=dtype), arch="gpt2")
    check_against(
        ours, mlp, x_of(shape, dtype), tol(FLOOR_NAMES["gpt2"][dtype]), f"PositionWiseFFN vs GPT2MLP (Conv1D), {dtype}"
    )


@pytest.mark.parametrize("arch", ["gpt_neox", "gpt2"])
def test_positionwise_ffn_hf_mlps_disagree_when_the_activation_is_swapped(hf, arch):
    """Exact (erf) and tanh GELU differ by up to ~5e-4: far above the tolerance, so the mapping
    gelu -> "gelu", gelu_new -> "gelu_tanh" is what the two tests above check."""
    mlp, wrong = (hf_gpt_neox_mlp(hf), "gelu_tanh") if arch == "gpt_neox" else (hf_gpt2_mlp(hf), "gelu")
    ours = ours_from(mlp, PositionWiseFFN(D, H, activation=wrong), arch=arch)
    x = x_of("3d")
    with torch.no_grad():
        assert not compare(ours(x), mlp(x), tol(FLOOR_NAMES[arch][F32])).ok


# --- the convert API ---------------------------------------------------------------------------


def test_convert_activation_from_hf_names():
    assert [convert.activation_from_hf(n) for n in ("silu", "gelu", "gelu_new", "gelu_pytorch_tanh")] == [
        "silu", "gelu", "gelu_tanh", "gelu_tanh",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="'gelu_fast'"):
        convert.activation_from_hf("gelu_fast")


def test_convert_from_hf_renames_llama_names_and_keeps_prefixes():
    t = torch.zeros(1)
    hf_names = ["model.layers.3.mlp.gate_proj.weight", "model.layers.3.mlp.up_proj.weight",
                "model.layers.3.mlp.down_proj.weight", "model.layers.3.post_attention_layernorm.weight",
                "gate_proj.weight", "up_proj.weight", "down_proj.weight", "weight"]  # fmt: skip
    assert list(convert.from_hf({k: t for k in hf_names})) == [
        "model.layers.3.ffn.w1.weight", "model.layers.3.ffn.w3.weight",
        "model.layers.3.ffn.w2.weight", "model.layers.3.ln2.weight",
        "w1.weight", "w3.weight", "w2.weight", "weight",
    ]  # fmt: skip


def layernorm_block() -> FFNBlock:
    return FFNBlock(FFNBlockConfig(D, H, norm="layernorm", ffn="positionwise", activation="gelu", bias=True))


@pytest.mark.parametrize(
    "arch, build",  # modules are built in the test, not at collection (the handout's stubs raise)
    [
        ("llama", lambda: FFNBlock(FFNBlockConfig(d_model=D, d_ff=H))),
        ("llama", lambda: SwiGLUFFN(D, H)),
        ("gpt_neox", layernorm_block),
        ("gpt2", layernorm_block),
        ("gpt2", lambda: PositionWiseFFN(D, H)),
    ],
    ids=["llama-block", "llama-mlp", "gpt_neox-block", "gpt2-block", "gpt2-mlp"],
)  # fmt: skip
def test_convert_from_hf_inverts_to_hf(arch, build):
    module = build()
    ours = {f"layers.0.{k}" if isinstance(module, FFNBlock) else k: v for k, v in module.state_dict().items()}
    back = convert.from_hf(convert.to_hf(ours, arch), arch)
    assert list(back) == list(ours)
    assert all(torch.equal(back[k], ours[k]) for k in ours)


def test_convert_to_hf_inverts_from_hf_on_a_real_llama_layer(hf):
    theirs = ffn_part(hf_llama_layer(hf).state_dict())
    back = convert.to_hf(convert.from_hf(theirs))
    assert list(back) == list(theirs) and all(torch.equal(back[k], theirs[k]) for k in theirs)


def test_convert_gpt2_conv1d_weights_are_transposed(hf):
    mlp = hf_gpt2_mlp(hf)
    ours = convert.from_hf(mlp.state_dict(), arch="gpt2")
    assert mlp.c_fc.weight.shape == (D, H) and ours["w1.weight"].shape == (H, D)  # Conv1D: (in, out)
    assert torch.equal(ours["w1.weight"], mlp.c_fc.weight.T) and torch.equal(ours["w2.weight"], mlp.c_proj.weight.T)
    assert torch.equal(convert.to_hf(ours, arch="gpt2")["c_fc.weight"], mlp.c_fc.weight)


def test_convert_from_hf_unknown_keys_raise_naming_them(hf):
    layer = hf_llama_layer(hf).state_dict()  # attention and its norm have no counterpart here
    unknown = [k for k in layer if k not in ffn_part(layer)]
    assert "self_attn.q_proj.weight" in unknown and "input_layernorm.weight" in unknown
    with pytest.raises(ValueError, match="no name matches") as info:
        convert.from_hf(layer)
    assert f"no name matches {unknown};" in str(info.value)


def test_convert_load_state_dict_missing_key_raises_and_leaves_module_untouched(hf):
    theirs = ffn_part(hf_llama_layer(hf).state_dict())
    del theirs["mlp.up_proj.weight"]
    block = FFNBlock(FFNBlockConfig(d_model=D, d_ff=H, eps=EPS))
    before = copy.deepcopy(block.state_dict())
    with pytest.raises(ValueError, match=r"missing keys \['ffn\.w3\.weight'\]"):
        convert.load_state_dict(block, theirs, naming="hf")
    assert all(torch.equal(v, before[k]) for k, v in block.state_dict().items())


def test_convert_load_state_dict_unexpected_key_raises_naming_it():
    sd = SwiGLUFFN(D, H).state_dict() | {"w4.weight": torch.zeros(H, D)}
    with pytest.raises(ValueError, match=r"unexpected keys \['w4\.weight'\]"):
        convert.load_state_dict(SwiGLUFFN(D, H), sd)


def test_convert_load_state_dict_shape_mismatch_raises_naming_key_and_shapes(hf):
    mlp = hf_gpt2_mlp(hf)
    untransposed = {"w1.weight": mlp.c_fc.weight, "w1.bias": mlp.c_fc.bias, "w2.weight": mlp.c_proj.weight,
                    "w2.bias": mlp.c_proj.bias}  # fmt: skip
    with pytest.raises(ValueError, match=rf"w1\.weight: shape \({D}, {H}\), expected \({H}, {D}\)"):
        convert.load_state_dict(PositionWiseFFN(D, H), untransposed)


def test_convert_load_state_dict_loads_meta_names():
    source = FFNBlock(FFNBlockConfig(d_model=D, d_ff=H))
    meta = convert.to_meta({k: torch.randn_like(v) for k, v in source.state_dict().items()})
    assert sorted(meta) == [
        "feed_forward.w1.weight",
        "feed_forward.w2.weight",
        "feed_forward.w3.weight",
        "ffn_norm.weight",
    ]
    block = convert.load_state_dict(FFNBlock(FFNBlockConfig(d_model=D, d_ff=H)), meta, naming="meta")
    assert all(torch.equal(block.state_dict()[k], v) for k, v in convert.from_meta(meta).items())


def test_convert_load_state_dict_rejects_unknown_naming_and_arch():
    with pytest.raises(ValueError, match="naming 'pytorch'"):
        convert.load_state_dict(SwiGLUFFN(D, H), {}, naming="pytorch")
    with pytest.raises(ValueError, match="arch 'mistral'"):
        convert.load_state_dict(SwiGLUFFN(D, H), {}, naming="hf", arch="mistral")


@pytest.mark.parametrize("vocab, scale", [(1000, 0.5), (5000, 2.0)])
def test_generate_top_p_keeps_a_wide_nucleus_as_transformers_does(vocab, scale):
    """Hundreds of tokens in the nucleus: the tokens transformers' TopPLogitsWarper keeps."""
    from transformers.generation.logits_process import TopPLogitsWarper

    from cs336_basics.generation.sampling import top_p_filter

    logits = torch.randn(3, vocab, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * scale
    ours = top_p_filter(torch.softmax(logits, dim=-1), 0.9)
    theirs = torch.softmax(TopPLogitsWarper(0.9)(None, logits.clone()), dim=-1)
    assert int((ours > 0).sum(-1).min()) > 100
    assert torch.equal(ours > 0, theirs > 0)


def measure_floors(seeds=range(50)) -> dict[str, float]:
    """{floor name: max scaled error of ours vs HF over `seeds` x SHAPES}."""
    hf, floors = import_hf(), MaxErrors()
    for seed in seeds:
        mlp, norm, layer = hf_llama_mlp(hf, seed), hf_llama_rmsnorm(hf, seed), hf_llama_layer(hf, seed)
        neox, gpt2 = hf_gpt_neox_mlp(hf, seed), hf_gpt2_mlp(hf, seed)
        block = FFNBlock(FFNBlockConfig(D, H, eps=EPS))
        convert.load_state_dict(block, ffn_part(layer.state_dict()), naming="hf")
        pairs = {
            "swiglu": (ours_from(mlp, SwiGLUFFN(D, H)), mlp),
            "gpt_neox": (ours_from(neox, PositionWiseFFN(D, H, "gelu"), "gpt_neox"), neox),
            "gpt2": (ours_from(gpt2, PositionWiseFFN(D, H, "gelu_tanh"), "gpt2"), gpt2),
        }
        runs = [(FLOOR_NAMES[name][F32], ours, theirs) for name, (ours, theirs) in pairs.items()]
        runs += [(FLOOR_NAMES[name][F64], copy.deepcopy(ours).double(), copy.deepcopy(theirs).double())
                 for name, (ours, theirs) in pairs.items()]  # fmt: skip
        runs += [("rmsnorm.hf", ours_from(norm, RMSNorm(D, eps=EPS)), norm),
                 ("ffn_block.hf", block, lambda x, layer=layer: x + layer.mlp(layer.post_attention_layernorm(x)))]  # fmt: skip
        for name, ours, theirs in runs:
            dtype = F64 if name.endswith("_f64") else F32
            for shape in SHAPES:
                x = x_of(shape, dtype, seed=1 + seed)  # seed 0 is what the tests run
                with torch.no_grad():
                    floors.keep(name, ours(x), theirs(x))
    return floors
