import pytest
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from . import adapters
from ._helpers import F64, assert_close, rand


@pytest.mark.parametrize("case", fixture_names("silu"))
def test_silu_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.mark.parametrize("batch", [(9,), (3, 5), (2, 3, 4, 5)], ids=["1d", "2d", "4d"])
def test_silu_kernel_matches_torch_builtin(batch):
    x = rand(*batch, std=4.0, mean=-1.0)
    assert_close(F.silu(x), TF.silu(x), tolerance(1.3e-16, F64), "silu vs F.silu")
