import pytest
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from ._helpers import F64, assert_close, rand
from .adapters import run_gelu


@pytest.mark.parametrize("case", fixture_names("gelu"))
def test_gelu_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_gelu(**fx.kwargs), fx)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("batch", [(9,), (3, 5), (2, 3, 4, 5)], ids=["1d", "2d", "4d"])
def test_gelu_kernel_matches_torch_builtin(batch, approximate):
    x = rand(*batch, std=4.0, mean=-1.0)
    expected = TF.gelu(x, approximate=approximate)
    assert_close(F.gelu(x, approximate=approximate), expected, tolerance(5.5e-17, F64), "gelu vs F.gelu")
