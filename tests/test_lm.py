"""The language model against Hugging Face's LlamaForCausalLM (random weights, GQA, tied and
untied), loaded under Hugging Face and Meta names; without positions (NoPE) against its formula
written with built-ins. Tolerances: tests/floors.py ("lm.*"), the
floors measured by measure_floors below (seeds 0-9)."""

import dataclasses

import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import RotaryPositionalEmbedding, TransformerLM, TransformerLMConfig, convert
from cs336_basics.nn.convert_llama import LAYER_NAMES, TOP_NAMES

from . import adapters, oracles
from ._helpers import assert_close
from .adapters import run_transformer_lm
from .floors import MaxErrors, tol

V, CTX, D, LAYERS, HEADS, KV, H, THETA = 97, 64, 48, 2, 4, 2, 136, 500.0


@pytest.mark.parametrize("case", fixture_names("lm"))
def test_lm_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)  # CS336's model, an ablation, or cached


def config(tie=False):
    return TransformerLMConfig(V, CTX, D, LAYERS, HEADS, H, THETA, KV, tie_embeddings=tie)


def ids_of(seq=11, seed=0):
    return torch.randint(0, V, (2, seq), generator=torch.Generator().manual_seed(seed))


def seeded_model(tie=False, seed=0) -> TransformerLM:
    torch.manual_seed(seed)
    return TransformerLM(config(tie))


def test_lm_adapter_takes_cs336_names_and_a_sequence_shorter_than_the_context():
    ours = seeded_model()
    weights = dict(ours.state_dict())
    ids = ids_of(seq=5)
    with torch.no_grad():
        assert torch.equal(run_transformer_lm(V, CTX, D, LAYERS, HEADS, H, THETA, weights, ids), ours(ids))


def test_lm_loads_meta_names():
    ours = seeded_model()
    meta = {}
    for key, value in ours.state_dict().items():
        if key.startswith("layers."):
            _, i, rest = key.split(".", 2)
            meta[f"layers.{i}.{LAYER_NAMES[rest][1]}"] = value
        else:
            meta[TOP_NAMES[key][1]] = value
    assert "layers.0.attention.wq.weight" in meta and "output.weight" in meta
    loaded = convert.load_state_dict(TransformerLM(config()), meta, naming="meta")
    ids = ids_of()
    with torch.no_grad():
        assert torch.equal(loaded(ids), ours(ids))


def test_lm_input_longer_than_the_context_raises():
    with pytest.raises(ValueError, match=r"in_indices has 65 tokens after 0 cached ones; context_length=64"):
        TransformerLM(config())(torch.zeros(1, 65, dtype=torch.long))


def test_lm_tied_model_has_no_head_in_its_state_dict():
    keys = set(TransformerLM(config(tie=True)).state_dict())
    assert "lm_head.weight" not in keys and "token_embeddings.weight" in keys
    assert not any("cos" in k or "sin" in k for k in keys)


def cached_logits(model, ids, prefill=6):
    """The logits of `ids` from a prefill of `prefill` tokens, then one token at a time."""
    cache = model.new_kv_cache()
    logits = [model(ids[:, :prefill], kv_cache=cache)]
    logits += [model(ids[:, i : i + 1], kv_cache=cache) for i in range(prefill, ids.shape[-1])]
    return torch.cat(logits, 1)


def test_lm_cached_prefix_gives_the_same_logits():
    torch.manual_seed(0)
    model, ids = TransformerLM(config()), ids_of()
    with torch.no_grad():
        assert_close(cached_logits(model, ids), model(ids), tol("lm.cache"), "cached vs whole")


def builtin_nope_lm(model: TransformerLM, ids):
    """The language model without positions (NoPE: no rotation anywhere) from its weights, with
    torch's embedding lookup, F.rms_norm, F.linear, F.silu and F.scaled_dot_product_attention."""
    w = {k: v.detach() for k, v in model.state_dict().items()}
    x = TF.embedding(ids, w["token_embeddings.weight"])
    for i in range(LAYERS):
        p = f"layers.{i}."
        h = x + oracles.mha(TF.rms_norm(x, (D,), w[p + "ln1.weight"], 1e-5), w[p + "attn.q_proj.weight"],
                            w[p + "attn.k_proj.weight"], w[p + "attn.v_proj.weight"], w[p + "attn.output_proj.weight"],
                            HEADS)  # fmt: skip
        x = h + oracles.swiglu_ffn(TF.rms_norm(h, (D,), w[p + "ln2.weight"], 1e-5), w[p + "ffn.w1.weight"],
                                   w[p + "ffn.w2.weight"], w[p + "ffn.w3.weight"])  # fmt: skip
    return TF.linear(TF.rms_norm(x, (D,), w["ln_final.weight"], 1e-5), w["lm_head.weight"])


def nope_model(seed=0) -> TransformerLM:
    torch.manual_seed(seed)
    model = TransformerLM(dataclasses.replace(config(), position="none"), dtype=torch.float64)
    with torch.no_grad():  # norms away from 1, so that a swapped or missing one shows
        for name, p in model.named_parameters():
            if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "ln_final.weight":
                p.uniform_(0.5, 1.5)
    return model


def test_lm_nope_matches_its_formula_in_builtins_without_rotation():
    model, ids = nope_model(), ids_of()
    with torch.no_grad():
        assert_close(model(ids), builtin_nope_lm(model, ids), tol("lm.nope"), "NoPE logits vs built-ins")


def test_lm_nope_has_no_position_module_and_the_same_weights():
    model = nope_model()
    assert not [m for m in model.modules() if isinstance(m, RotaryPositionalEmbedding)]
    assert set(model.state_dict()) == set(TransformerLM(config()).state_dict())


def test_lm_without_norms_has_no_norm_weights():
    model = TransformerLM(dataclasses.replace(config(), norm="none"))
    assert not [k for k in model.state_dict() if ".ln" in k or k.startswith("ln")]


def test_lm_ungated_ffn_reaches_every_layer():
    model = TransformerLM(dataclasses.replace(config(), ffn="silu"))
    assert not [k for k in model.state_dict() if k.endswith("ffn.w3.weight")], "a layer kept SwiGLU's gate"


@pytest.mark.parametrize(("setting", "value"), [("norm", "rms"), ("position", "alibi"), ("ffn", "mlp")])
def test_lm_unknown_ablation_names_the_setting(setting, value):
    with pytest.raises(ValueError, match=f"{setting} must be one of .*got '{value}'"):
        dataclasses.replace(config(), **{setting: value})


def measure_floors(seeds=range(10)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of every comparison above."""
    floors = MaxErrors()
    for seed in seeds:
        torch.manual_seed(seed)
        model, ids = TransformerLM(config()), ids_of(seed=seed)
        with torch.no_grad():
            floors.keep("lm.cache", cached_logits(model, ids), model(ids))
        model = nope_model(seed)
        with torch.no_grad():
            for seq in (5, 11, CTX):
                ids = ids_of(seq, seed)
                floors.keep("lm.nope", model(ids), builtin_nope_lm(model, ids))
    return floors


def test_lm_passes_its_eps_to_every_norm():
    model = TransformerLM(dataclasses.replace(config(), eps=1e-2))
    eps = {model.ln_final.eps} | {n.eps for layer in model.layers for n in (layer.ln1, layer.ln2)}
    assert eps == {1e-2}


def test_lm_runs_every_layer_at_the_given_token_positions():
    # positions that are not 0, 1, ..., seq - 1 (nor a shift of them, which RoPE cannot tell); in
    # float64, where composing the layers by hand rounds no more than lm.nope's built-ins do
    torch.manual_seed(0)
    model = TransformerLM(config(), dtype=torch.float64)
    ids, positions = ids_of(seq=6), torch.tensor([0, 2, 3, 7, 8, 20])
    with torch.no_grad():
        x = model.token_embeddings(ids)
        for layer in model.layers:
            x = layer(x, positions)
        expected = TF.linear(model.ln_final(x), model.lm_head.weight)
        assert_close(model(ids, token_positions=positions), expected, tol("lm.nope"), "logits at given positions")
