import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import SwiGLUFFN
from cs336_basics.nn import functional as F

from . import oracles
from ._helpers import assert_close, rand
from .adapters import run_swiglu
from .floors import MaxErrors, tol


@pytest.mark.parametrize("case", fixture_names("swiglu"))
def test_swiglu_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_swiglu(**fx.kwargs), fx)


BUILTIN_SHAPES = {"1d": (), "2d": (5,), "4d": (2, 3, 4)}


def _ours_and_builtin(batch: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    x = rand(*batch, 24, std=2.0, mean=-0.3, seed=1)
    w1, w2, w3 = rand(40, 24, std=0.3, seed=2), rand(24, 40, std=0.3, seed=3), rand(40, 24, std=0.3, seed=4)
    return F.swiglu_ffn(x, w1, w2, w3), oracles.swiglu_ffn(x, w1, w2, w3)


@pytest.mark.parametrize("batch", BUILTIN_SHAPES.values(), ids=BUILTIN_SHAPES)
def test_swiglu_kernel_matches_torch_builtin(batch):
    assert_close(*_ours_and_builtin(batch), tol("swiglu.f64"), "swiglu vs built-ins")


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of the comparison with the built-ins above, on its inputs
    (`seeds` do not apply)."""
    return MaxErrors.of("swiglu.f64", (_ours_and_builtin(batch) for batch in BUILTIN_SHAPES.values()))


def test_swiglu_module_state_dict_keys_follow_meta_names():
    ffn = SwiGLUFFN(d_model=24, d_ff=40)
    shapes = {k: tuple(v.shape) for k, v in ffn.state_dict().items()}
    assert shapes == {"w1.weight": (40, 24), "w2.weight": (24, 40), "w3.weight": (40, 24)}


def test_swiglu_module_default_d_ff_is_8_thirds_rounded_up_to_64():
    assert SwiGLUFFN(d_model=64).d_ff == 192  # 8/3 * 64 = 170.7 -> 192
    assert SwiGLUFFN(d_model=512, device="meta").w1.weight.shape == (1408, 512)  # 1365.3 -> 1408
