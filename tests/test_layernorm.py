import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import LayerNorm
from cs336_basics.nn import functional as F

from . import adapters
from ._helpers import F64, assert_close, rand
from .floors import MaxErrors, tol


@pytest.mark.parametrize("case", fixture_names("layernorm"))
def test_layernorm_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


BUILTIN_SHAPES = {"1d": (), "2d": (5,), "4d": (2, 3, 4)}


def _ours_and_builtin(batch: tuple, with_bias: bool) -> tuple[torch.Tensor, torch.Tensor]:
    x = rand(*batch, 24, std=3.0, mean=2.0, seed=1)
    g, b = rand(24, std=0.5, mean=1.0, seed=2), (rand(24, seed=3) if with_bias else None)
    return F.layernorm(x, g, b, 1e-5), TF.layer_norm(x, (24,), g, b, 1e-5)


@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("batch", BUILTIN_SHAPES.values(), ids=BUILTIN_SHAPES)
def test_layernorm_kernel_matches_torch_builtin(batch, with_bias):
    assert_close(*_ours_and_builtin(batch, with_bias), tol("layernorm.f64"), "layernorm vs F.layer_norm")


def test_layernorm_module_parameters():
    assert {n: tuple(p.shape) for n, p in LayerNorm(24).named_parameters()} == {"weight": (24,), "bias": (24,)}
    assert {n for n, _ in LayerNorm(24, bias=False).named_parameters()} == {"weight"}


def test_layernorm_init_gain_is_one():
    """torch.nn.LayerNorm's init (Ba et al. 2016 start from the identity): gain 1."""
    assert torch.equal(LayerNorm(24).weight.detach(), torch.ones(24))


def test_layernorm_init_bias_is_zero():
    """torch.nn.LayerNorm's init: bias 0."""
    assert torch.equal(LayerNorm(24).bias.detach(), torch.zeros(24))


def _modules_loaded_alike(bias: bool) -> tuple[LayerNorm, torch.nn.LayerNorm]:
    """Ours with torch.nn.LayerNorm's state dict loaded strictly (its gain, and bias, moved off init)."""
    theirs, ours = torch.nn.LayerNorm(24, eps=1e-5, bias=bias, dtype=F64), LayerNorm(24, bias=bias, dtype=F64)
    with torch.no_grad():
        theirs.weight.mul_(rand(24, seed=3))
        if bias:
            theirs.bias.add_(rand(24, seed=4))
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return ours, theirs


def _module_outputs(bias: bool) -> tuple[torch.Tensor, torch.Tensor]:
    ours, theirs = _modules_loaded_alike(bias)
    x = rand(3, 24)
    with torch.no_grad():
        return ours(x), theirs(x)


def test_layernorm_module_without_bias_matches_torch_nn_layernorm():
    """bias=False: no bias parameter, and the module still runs (its bias is None, not missing)."""
    assert_close(*_module_outputs(bias=False), tol("layernorm.f64"), "LayerNorm(bias=False) vs torch.nn.LayerNorm")


def test_layernorm_loads_torch_nn_layernorm_state_dict_and_matches_it():
    """The same keys as torch.nn.LayerNorm (weight, bias): its state dict loads strictly."""
    assert_close(*_module_outputs(bias=True), tol("layernorm.f64"), "LayerNorm vs torch.nn.LayerNorm")


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of the comparisons with the built-ins above, on their inputs
    (`seeds` do not apply)."""
    floors = MaxErrors()
    for batch in BUILTIN_SHAPES.values():
        for with_bias in (True, False):
            floors.keep("layernorm.f64", *_ours_and_builtin(batch, with_bias))
    for bias in (True, False):
        floors.keep("layernorm.f64", *_module_outputs(bias))
    return floors
