"""Staff only: the norm and FFN tables (cs336_basics/nn/modules/registry.py) are the one list of
names, filled by the module files' decorators. Every entry builds a module of the stated shape
from the arguments its class accepts; FFNBlockConfig, TransformerBlock, TransformerLM and the
parameter count take exactly the tables' names; a kind entered by its decorator alone (a stand-in
for DyT below) reaches every norm of a language model and its parameter count."""

import re
import subprocess
import sys
from pathlib import Path

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

from .test_layering import imported_modules


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


class StandInDyT(nn.Module):
    """weight * tanh(alpha x) + bias, a norm-free layer (Zhu et al. 2025, "Transformers without
    Normalization"); alpha starts at 0.5 as in its code."""

    def __init__(self, d_model: int, device=None, dtype=None):
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), 0.5, device=device, dtype=dtype))
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(d_model, device=device, dtype=dtype))

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        return self.weight * torch.tanh(self.alpha * x) + self.bias


@pytest.fixture
def stand_in():
    """A DyT entered in the norm table by the decorator a module file puts above its class, for one
    test, under a name no component of the package takes."""
    registry.norm("stand_in_dyt")(StandInDyT)
    yield StandInDyT
    del registry.NORMS["stand_in_dyt"]


def test_module_tables_a_norm_entered_by_its_decorator_alone_reaches_every_norm_and_the_count(stand_in):
    config = TransformerLMConfig(50, 8, 16, 2, 2, 32, norm_type="stand_in_dyt")
    model = TransformerLM(config)
    assert len(_norms(model)) == 5 and all(isinstance(m, StandInDyT) for m in _norms(model))
    assert parameter_count(config) == sum(p.numel() for p in model.parameters())
    block = FFNBlock(FFNBlockConfig(16, 32, norm="stand_in_dyt"))
    assert isinstance(block.ln2, StandInDyT)
    x = torch.randn(2, 3, 16)
    assert torch.allclose(block(x), x + block.ffn(torch.tanh(0.5 * x)))


def test_module_tables_an_entry_passes_the_arguments_its_class_accepts_and_the_defaults():
    assert registry.NORMS["rmsnorm"](8, 1e-3, True, None, torch.float64).eps == 1e-3  # no bias to take
    assert registry.NORMS["layernorm"](8).bias is None  # a norm's bias only when asked
    assert registry.NORMS["layernorm"](8, bias=True).bias is not None
    positionwise = registry.FFNS["positionwise"](8, 16)  # the class's own defaults: GELU, biases
    assert positionwise.activation == "gelu" and positionwise.w1.bias is not None
    swiglu = registry.FFNS["swiglu"](8, None, bias=True)  # SiLU, the 8/3 rule, no biases
    assert (swiglu.activation, swiglu.d_ff, swiglu.w1.bias) == ("silu", 64, None)


def test_module_tables_refuse_a_name_another_class_holds_and_a_class_they_cannot_build():
    class Other(RMSNorm):
        pass

    with pytest.raises(ValueError, match="norm 'rmsnorm' is RMSNorm already"):
        registry.norm("rmsnorm")(Other)
    assert registry.NORMS["rmsnorm"].cls is RMSNorm

    class Grouped(nn.Module):
        def __init__(self, d_model: int, groups: int):
            super().__init__()

    with pytest.raises(TypeError, match=r"Grouped requires \['groups'\]"):
        registry.norm("grouped")(Grouped)
    assert "grouped" not in registry.NORMS


@pytest.mark.parametrize("first", ["cs336_basics.nn.modules.registry", "cs336_basics.nn.modules.transformer_block"])
def test_module_tables_are_complete_whatever_is_imported_first(first):
    """A fresh interpreter importing `first` alone sees every entry (registry.py imports no module file)."""
    code = f"import {first}; from cs336_basics.nn.modules import registry; print(list(registry.NORMS), list(registry.FFNS))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{list(registry.NORMS)} {list(registry.FFNS)}"
    assert not [m for m in imported_modules(Path(registry.__file__)) if m.startswith("cs336_basics")]
