import pytest

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import SwiGLUFFN
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from . import oracles
from ._helpers import F64, assert_close, rand
from .adapters import run_swiglu


@pytest.mark.parametrize("case", fixture_names("swiglu"))
def test_swiglu_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_swiglu(**fx.kwargs), fx)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3, 4)], ids=["1d", "2d", "4d"])
def test_swiglu_kernel_matches_torch_builtin(batch):
    x = rand(*batch, 24, std=2.0, mean=-0.3, seed=1)
    w1, w2, w3 = rand(40, 24, std=0.3, seed=2), rand(24, 40, std=0.3, seed=3), rand(40, 24, std=0.3, seed=4)
    expected = oracles.swiglu_ffn(x, w1, w2, w3)
    assert_close(F.swiglu_ffn(x, w1, w2, w3), expected, tolerance(2.7e-16, F64), "swiglu vs built-ins")


def test_swiglu_module_state_dict_keys_follow_meta_names():
    ffn = SwiGLUFFN(d_model=24, d_ff=40)
    shapes = {k: tuple(v.shape) for k, v in ffn.state_dict().items()}
    assert shapes == {"w1.weight": (40, 24), "w2.weight": (24, 40), "w3.weight": (40, 24)}


def test_swiglu_module_default_d_ff_is_8_thirds_rounded_up_to_64():
    assert SwiGLUFFN(d_model=64).d_ff == 192  # 8/3 * 64 = 170.7 -> 192
    assert SwiGLUFFN(d_model=512, device="meta").w1.weight.shape == (1408, 512)  # 1365.3 -> 1408
