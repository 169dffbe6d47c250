import pytest

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import PositionWiseFFN
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from . import adapters, oracles
from ._helpers import F64, assert_close, rand


@pytest.mark.parametrize("case", fixture_names("positionwise_ffn"))
def test_positionwise_ffn_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3, 4)], ids=["1d", "2d", "4d"])
def test_positionwise_ffn_kernel_matches_torch_builtin(batch):
    x = rand(*batch, 24, std=2.0, mean=-0.3, seed=1)
    w1, b1, w2, b2 = rand(40, 24, std=0.3, seed=2), rand(40, seed=3), rand(24, 40, std=0.3, seed=4), rand(24, seed=5)
    expected = oracles.positionwise_ffn(x, w1, b1, w2, b2)
    assert_close(
        F.positionwise_ffn(x, w1, b1, w2, b2, "gelu"),
        expected,
        tolerance(6.5e-16, F64),
        "positionwise ffn vs built-ins",
    )


def test_positionwise_ffn_module_state_dict_keys():
    shapes = {k: tuple(v.shape) for k, v in PositionWiseFFN(24, 40).state_dict().items()}
    assert shapes == {"w1.weight": (40, 24), "w1.bias": (40,), "w2.weight": (24, 40), "w2.bias": (24,)}
    assert set(PositionWiseFFN(24, 40, bias=False).state_dict()) == {"w1.weight", "w2.weight"}
