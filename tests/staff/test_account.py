"""`cs336 account` (cs336_basics/accounting) checked against what the reference model does:
forward and training FLOPs against torch.utils.flop_counter.FlopCounterMode (which counts the
matrix multiplies PyTorch runs), parameter counts against the model's own, on small configurations
that differ in every term (grouped-query heads, tied embeddings, a sequence shorter than the context)."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from cs336_basics.accounting import flops as FL
from cs336_basics.accounting.memory import training_memory
from cs336_basics.accounting.params import parameter_count, parameters_by_part
from cs336_basics.accounting.shapes import SHAPES, named_shape
from cs336_basics.cli import main
from cs336_basics.nn.modules.transformer_lm import TransformerLM, TransformerLMConfig

# (config, batch, seq): each term of the count changes between them
CONFIGS = {
    "multi_head": (TransformerLMConfig(vocab_size=97, context_length=16, d_model=24, num_layers=2, num_heads=3,
                                       d_ff=40), 2, 16),
    "grouped_query": (TransformerLMConfig(vocab_size=50, context_length=12, d_model=32, num_layers=3, num_heads=4,
                                          d_ff=56, num_kv_heads=2), 3, 12),
    "tied_short_seq": (TransformerLMConfig(vocab_size=71, context_length=20, d_model=16, num_layers=1, num_heads=2,
                                           d_ff=48, tie_embeddings=True), 1, 7),
    "multi_query": (TransformerLMConfig(vocab_size=33, context_length=9, d_model=30, num_layers=2, num_heads=5,
                                        d_ff=20, num_kv_heads=1), 2, 9),
    "norm_kind_ln": (TransformerLMConfig(vocab_size=40, context_length=8, d_model=20, num_layers=2, num_heads=2,
                                      d_ff=24, norm_type="layernorm"), 2, 8),
}  # fmt: skip


def _model(config: TransformerLMConfig) -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(config)


def _ids(config: TransformerLMConfig, batch: int, seq: int) -> torch.Tensor:
    return torch.randint(config.vocab_size, (batch, seq), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("name", CONFIGS)
def test_account_forward_flops_equal_flop_counter(name):
    config, batch, seq = CONFIGS[name]
    model, ids = _model(config), _ids(config, batch, seq)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids)
    assert FL.forward_flops(config, batch, seq) == counter.get_total_flops()


@pytest.mark.parametrize("name", CONFIGS)
def test_account_training_flops_are_three_forward_passes(name):
    config, batch, seq = CONFIGS[name]
    model, ids = _model(config), _ids(config, batch, seq)
    with FlopCounterMode(display=False) as counter:
        model(ids).sum().backward()
    assert 3 * FL.forward_flops(config, batch, seq) == counter.get_total_flops()
    assert FL.training_flops_per_token(config, seq) * batch * seq == counter.get_total_flops()


@pytest.mark.parametrize("name", CONFIGS)
def test_account_parameter_count_equals_the_models(name):
    config = CONFIGS[name][0]
    model = _model(config)
    assert parameter_count(config) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", CONFIGS)
def test_account_parameters_by_part_follow_the_state_dict(name):
    config = CONFIGS[name][0]
    part_of = {"token_embeddings": "embedding", "attn": "attention", "ffn": "ffn", "lm_head": "lm_head"}
    counted = dict.fromkeys(parameters_by_part(config), 0)
    for key, p in _model(config).named_parameters():
        part = next((v for k, v in part_of.items() if k in key.split(".")), "norms")
        counted[part] += p.numel()
    assert counted == parameters_by_part(config)


@pytest.mark.parametrize("shape", SHAPES)
def test_account_named_shapes_build_the_models_config(shape):
    config = named_shape(shape)
    assert (config.vocab_size, config.context_length, config.d_ff) == (50257, 1024, 4 * config.d_model)
    assert config.d_model % config.num_heads == 0


def test_account_gpt2_xl_parameter_count_is_two_billion():
    # 2 V d + L (4 d^2 + 3 d d_ff + 2 d) + d with V 50257, d 1600, L 48, d_ff 6400
    assert (
        parameter_count(named_shape("gpt2-xl")) == 2 * 50257 * 1600 + 48 * (4 * 1600**2 + 3 * 1600 * 6400 + 3200) + 1600
    )


def test_account_largest_batch_is_the_last_that_fits():
    memory = training_memory(named_shape("gpt2-small"))
    for budget in (memory.fixed - 1, memory.fixed, 80e9, 1e12):
        batch = memory.largest_batch(budget)
        assert batch == 0 or memory.total(batch) <= budget
        assert memory.total(batch + 1) > budget


def test_account_memory_grows_by_one_sequence_per_batch_row():
    memory = training_memory(named_shape("gpt2-medium"), seq=512, bytes_per_element=2)
    assert memory.total(7) - memory.total(3) == 4 * memory.per_sequence
    assert memory.fixed == 4 * memory.parameters == 4 * 2 * parameter_count(named_shape("gpt2-medium"))


def test_account_training_time_scales_with_mfu():
    assert FL.training_seconds(1e18, 0.5, 1e12) == 2 * FL.training_seconds(1e18, 1.0, 1e12)
    with pytest.raises(ValueError, match="mfu"):
        FL.training_seconds(1e18, 0.0, 1e12)


def test_account_command_prints_parameters_flops_and_optimizer_memory(capsys):
    assert main(["account", "--shape", "gpt2-xl"]) == 0
    out = capsys.readouterr().out
    config = named_shape("gpt2-xl")
    assert f"parameters: {parameter_count(config):,}" in out
    assert f"{FL.forward_flops(config):.4e}" in out
    assert "AdamW state" in out and "largest batch in 80 GB" in out


def test_account_command_reads_a_train_config(tmp_path, capsys):
    (tmp_path / "config.toml").write_text("d_model = 64\nnum_layers = 2\nnum_heads = 2\nd_ff = 96\nvocab_size = 300\n")
    assert main(["account", "--config", str(tmp_path)]) == 0
    expected = TransformerLMConfig(vocab_size=300, context_length=128, d_model=64, num_layers=2, num_heads=2, d_ff=96)
    assert f"parameters: {parameter_count(expected):,}" in capsys.readouterr().out


def test_account_command_names_an_unknown_shape(capsys):
    assert main(["account", "--shape", "gpt5"]) == 1
    err = capsys.readouterr().err
    assert "gpt5" in err and "gpt2-xl" in err


def test_account_staff_answer_key_is_what_the_script_writes():
    from cs336_basics.staff.accounting_key import PAGE, render

    assert PAGE.read_text() == render(), "tests/staff/accounting_key.md is stale: run uv run cs336 accounting-key"


@pytest.mark.parametrize("shape", SHAPES)
def test_account_answer_keys_closed_forms_equal_the_counts(shape):
    # the algebra printed in the key's adamwAccounting (a), for multi-head attention and untied embeddings
    from cs336_basics.accounting.memory import activation_terms

    c = named_shape(shape, context_length=300)
    V, T, d, L, h, F = c.vocab_size, c.context_length, c.d_model, c.num_layers, c.num_heads, c.d_ff
    assert parameter_count(c) == 2 * V * d + L * (4 * d * d + 3 * d * F + 2 * d) + d
    assert FL.forward_flops(c) == L * (8 * T * d * d + 4 * T * T * d + 6 * T * d * F) + 2 * T * d * V
    assert sum(activation_terms(c).values()) == L * (8 * T * d + 2 * h * T * T + 4 * T * F) + T * d + 2 * T * V


@pytest.mark.parametrize("name", CONFIGS)
def test_account_parameter_gradient_and_optimizer_memory_equal_the_tensors_after_a_step(name):
    from cs336_basics.optim import AdamW

    config, batch, seq = CONFIGS[name]
    model = _model(config)
    optimizer = AdamW(model.parameters(), lr=1e-3)
    model(_ids(config, batch, seq)).sum().backward()
    optimizer.step()
    nbytes = lambda tensors: sum(t.numel() * t.element_size() for t in tensors)  # noqa: E731
    memory = training_memory(config, seq)
    assert memory.parameters == nbytes(model.parameters())
    assert memory.gradients == nbytes(p.grad for p in model.parameters())
    state = [v for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor) and v.dim()]
    assert memory.adamw_state == nbytes(state)
