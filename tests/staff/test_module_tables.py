"""Staff only: the norm and FFN tables (cs336_basics/nn/modules/registry.py) are the one list of
names. Every entry builds a module of the stated shape; FFNBlockConfig, TransformerBlock,
TransformerLM and the parameter count take exactly the tables' names; a kind added to the table
alone (DyT below) reaches every norm of a language model and its parameter count."""

import re

import pytest
import torch
from jaxtyping import Float
from torch import Tensor, nn

from cs336_basics.accounting.params import parameter_count
from cs336_basics.nn import (
    FFNBlock,
    FFNBlockConfig,
    LayerNorm,
    RMSNorm,
    TransformerBlock,
    TransformerLM,
    TransformerLMConfig,
)
from cs336_basics.nn.modules import registry


def _norms(model: nn.Module) -> list[nn.Module]:
    return [m for name, m in model.named_modules() if name.rsplit(".", 1)[-1] in ("ln1", "ln2", "ln_final")]


@pytest.mark.parametrize("name", list(registry.NORMS))
def test_module_tables_norm_entry_maps_d_model_to_d_model_in_the_asked_dtype(name):
    norm = registry.NORMS[name](12, eps=1e-3, bias=True, dtype=torch.float64)
    assert all(p.dtype == torch.float64 for p in norm.parameters())
    assert norm(torch.randn(2, 3, 12, dtype=torch.float64)).shape == (2, 3, 12)


@pytest.mark.parametrize("name", list(registry.FFNS))
def test_module_tables_ffn_entry_maps_d_model_to_d_model_in_the_asked_dtype(name):
    ffn = registry.FFNS[name](12, 20, activation="silu", bias=True, dtype=torch.float64)
    assert all(p.dtype == torch.float64 for p in ffn.parameters())
    assert ffn(torch.randn(2, 3, 12, dtype=torch.float64)).shape == (2, 3, 12)


def test_module_tables_names_are_the_ones_the_configs_accept():
    for norm in registry.NORMS:
        for ffn in registry.FFNS:
            FFNBlockConfig(8, 16, norm=norm, ffn=ffn)
    names = re.escape(str(list(registry.NORMS)))
    with pytest.raises(ValueError, match=rf"unknown norm 'groupnorm'; valid names are {names}"):
        FFNBlockConfig(8, 16, norm="groupnorm")
    with pytest.raises(ValueError, match=rf"norm_type must be one of {names}, got 'groupnorm'"):
        TransformerBlock(8, 2, 16, norm_type="groupnorm")
    with pytest.raises(ValueError, match=rf"norm_type must be one of {names}, got 'groupnorm'"):
        TransformerLMConfig(50, 8, 8, 1, 2, 16, norm_type="groupnorm")


def test_module_tables_norm_type_changes_a_decoder_layer_s_norms_not_its_keys():
    rms, ln = TransformerBlock(16, 2, 32, 8, 1e4), TransformerBlock(16, 2, 32, 8, 1e4, norm_type="layernorm")
    assert isinstance(rms.ln1, RMSNorm) and isinstance(rms.ln2, RMSNorm)
    assert isinstance(ln.ln1, LayerNorm) and isinstance(ln.ln2, LayerNorm) and ln.ln1.bias is None
    assert list(ln.state_dict()) == list(rms.state_dict())


def test_module_tables_norm_type_reaches_every_norm_of_the_model_and_keeps_its_keys():
    model = TransformerLM(TransformerLMConfig(50, 8, 16, 2, 2, 32, norm_type="layernorm"))
    assert len(_norms(model)) == 5 and all(isinstance(m, LayerNorm) for m in _norms(model))
    assert list(model.state_dict()) == list(TransformerLM(TransformerLMConfig(50, 8, 16, 2, 2, 32)).state_dict())


class DyT(nn.Module):
    """weight * tanh(alpha x) + bias, a norm-free layer (Zhu et al. 2025, "Transformers without
    Normalization"); alpha starts at 0.5 as in its code."""

    def __init__(self, d_model: int, device=None, dtype=None):
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), 0.5, device=device, dtype=dtype))
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(d_model, device=device, dtype=dtype))

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        return self.weight * torch.tanh(self.alpha * x) + self.bias


def dyt(d_model: int, eps: float = 1e-5, bias: bool = False, device=None, dtype=None) -> nn.Module:
    return DyT(d_model, device=device, dtype=dtype)


def test_module_tables_a_norm_added_to_the_table_alone_reaches_every_norm_and_the_count(monkeypatch):
    monkeypatch.setitem(registry.NORMS, "dyt", dyt)
    config = TransformerLMConfig(50, 8, 16, 2, 2, 32, norm_type="dyt")
    model = TransformerLM(config)
    assert len(_norms(model)) == 5 and all(isinstance(m, DyT) for m in _norms(model))
    assert parameter_count(config) == sum(p.numel() for p in model.parameters())
    block = FFNBlock(FFNBlockConfig(16, 32, norm="dyt"))
    assert isinstance(block.ln2, DyT)
    x = torch.randn(2, 3, 16)
    assert torch.allclose(block(x), x + block.ffn(torch.tanh(0.5 * x)))
