"""Every ablation setting (norm pre/post/none x position rope/none x ffn swiglu/silu, and the norms'
kind) reaches every consumer of the model's configuration: `cs336 account`'s parameters and FLOPs
equal the built model's count and torch.utils.flop_counter.FlopCounterMode's, MFU's FLOPs per token
are those, the leaderboard's expected state-dict shapes are the built model's, and the grader's
adapter builds the model the configuration names, field for field."""

import dataclasses
import itertools

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from cs336_basics import leaderboard as L
from cs336_basics.accounting import flops as FL
from cs336_basics.accounting.memory import training_memory
from cs336_basics.accounting.params import parameter_count, parameters_by_part
from cs336_basics.nn.modules.transformer_lm import TransformerLM, TransformerLMConfig
from cs336_basics.train import mfu
from cs336_basics.train.config import TrainConfig
from tests import adapters

GRID = [dict(norm=n, position=p, ffn=f) for n, p, f in itertools.product(("pre", "post", "none"), ("rope", "none"),
                                                                           ("swiglu", "silu"))]  # fmt: skip
GRID += [dict(norm="post", ffn="silu", norm_type="layernorm"), dict(norm="pre", norm_type="layernorm", eps=1e-3)]
IDS = [f"setting{i}" for i in range(len(GRID))]  # by number: "ffn=swiglu" would be selected by `-k swiglu`


def _config(settings: dict) -> TransformerLMConfig:
    return TransformerLMConfig(vocab_size=61, context_length=12, d_model=24, num_layers=2, num_heads=3, d_ff=40,
                               **settings)  # fmt: skip


def _model(c: TransformerLMConfig) -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(c)


def _ids(c: TransformerLMConfig, batch: int = 2, seq: int = 10) -> torch.Tensor:
    return torch.randint(c.vocab_size, (batch, seq), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("settings", GRID, ids=IDS)
def test_accounting_ablation_parameters_equal_the_built_models(settings):
    c = _config(settings)
    model = _model(c)
    assert parameter_count(c) == sum(p.numel() for p in model.parameters())
    part_of = {"token_embeddings": "embedding", "attn": "attention", "ffn": "ffn", "lm_head": "lm_head"}
    counted = dict.fromkeys(parameters_by_part(c), 0)
    for key, p in model.named_parameters():
        counted[next((v for k, v in part_of.items() if k in key.split(".")), "norms")] += p.numel()
    assert counted == parameters_by_part(c)


@pytest.mark.parametrize("settings", GRID, ids=IDS)
def test_accounting_ablation_flops_equal_the_flop_counter(settings):
    c, batch, seq = _config(settings), 2, 10
    model, ids = _model(c), _ids(c, batch, seq)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids)
    assert FL.forward_flops(c, batch, seq) == counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        model(ids).sum().backward()
    assert FL.training_flops_per_token(c, seq) * batch * seq == counter.get_total_flops()


@pytest.mark.parametrize("settings", GRID, ids=IDS)
def test_accounting_ablation_mfu_counts_the_flop_counters_training_flops(settings):
    c = _config(settings)
    model, ids = _model(c), _ids(c, 1, c.context_length)
    with FlopCounterMode(display=False) as counter:
        model(ids).sum().backward()
    assert mfu.model_flops_per_token(c) * c.context_length == counter.get_total_flops()


@pytest.mark.parametrize("settings", GRID, ids=IDS)
def test_accounting_ablation_memory_counts_the_models_tensors(settings):
    c = _config(settings)
    memory = training_memory(c)
    assert memory.parameters == 4 * sum(p.numel() for p in _model(c).parameters()) == memory.gradients


@pytest.mark.parametrize("settings", GRID, ids=IDS)
def test_accounting_ablation_leaderboard_shapes_are_the_built_models(settings):
    c = _config(settings)
    assert L.state_dict_shapes(c) == {k: tuple(v.shape) for k, v in _model(c).state_dict().items()}


@pytest.mark.parametrize("settings", GRID, ids=IDS)
def test_accounting_ablation_grader_adapter_builds_the_configured_model(settings):
    c = _config(settings)
    model, ids = _model(c), _ids(c)
    with torch.no_grad():
        got = adapters.leaderboard_transformer_lm(dataclasses.asdict(c), model.state_dict(), ids)
        assert torch.equal(got, model(ids))


@pytest.mark.parametrize("settings", [dict(ffn="silu", d_ff=512), dict(norm="none"), dict(norm_type="layernorm")])
def test_accounting_ablation_train_config_reaches_the_count(settings):
    c = TrainConfig(**settings).model_config()
    assert parameter_count(c) == sum(p.numel() for p in TransformerLM(c, device="meta").parameters())


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(TransformerLMConfig)])
def test_accounting_ablation_every_config_field_reaches_the_grader_adapter(field):
    # the grader passes dataclasses.asdict(config): a field it dropped would come back as its default
    c = _config({"norm": "post", "position": "none", "ffn": "silu", "norm_type": "layernorm", "eps": 1e-3,
                 "rope_theta": 500.0, "num_kv_heads": 1, "tie_embeddings": True})  # fmt: skip
    built = {}
    original = adapters.TransformerLM

    class Spy(original):
        def __init__(self, config, **kw):
            built["config"] = config
            super().__init__(config, **kw)

    adapters.TransformerLM = Spy
    try:
        adapters.leaderboard_transformer_lm(dataclasses.asdict(c), _model(c).state_dict(), _ids(c))
    finally:
        adapters.TransformerLM = original
    assert getattr(built["config"], field) == getattr(c, field)


def test_accounting_ablation_leaderboard_refuses_a_huge_model_before_building_it(monkeypatch):
    def built(*args, **kwargs):
        raise AssertionError("the model was built before its size was checked")

    monkeypatch.setattr(TransformerLM, "__init__", built)  # counted, not timed: building it is the failure
    with pytest.raises(L.LeaderboardError, match="parameters"):
        L.model_config(b"num_layers = 100000000\nd_model = 64\nnum_heads = 2\n")


def test_accounting_ablation_every_model_field_is_a_setting_that_reaches_the_model_and_resume():
    from dataclasses import fields

    from cs336_basics.train.config import ARCHITECTURE, MODEL_NAMES, NOT_SETTINGS

    setting = {MODEL_NAMES.get(f.name, f.name): f.name for f in fields(TrainConfig)}
    model_fields = [f.name for f in fields(TransformerLMConfig) if f.name not in NOT_SETTINGS]
    assert [f for f in model_fields if f not in setting] == [], "a model field no cs336 train setting gives"
    assert [setting[f] for f in model_fields if setting[f] not in ARCHITECTURE] == [], "resumable with it changed"
    changed = TrainConfig(vocab_size=500, context_length=64, d_model=48, num_layers=3, num_heads=6, d_ff=80,
                          rope_theta=500.0, norm_eps=1e-3, norm="post", position="none", ffn="silu",
                          norm_type="layernorm")  # fmt: skip
    c = changed.model_config()
    assert {f: getattr(c, f) for f in model_fields} == {f: getattr(changed, setting[f]) for f in model_fields}


def test_accounting_ablation_leaderboard_names_a_model_that_cannot_be_built(monkeypatch):
    from cs336_basics.nn.modules import transformer_lm

    def unwritten(self, *args, **kwargs):
        raise NotImplementedError("TransformerLM.__init__")

    monkeypatch.setattr(transformer_lm.TransformerLM, "__init__", unwritten)
    with pytest.raises(L.LeaderboardError, match="could not be built from config.toml.*NotImplementedError"):
        L.state_dict_shapes(_config({}))
