import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import Linear
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from . import adapters
from ._helpers import F64, assert_close, rand


@pytest.mark.parametrize("case", fixture_names("linear"))
def test_linear_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.mark.parametrize("batch", [(), (5,), (2, 3), (2, 3, 4)], ids=["1d", "2d", "3d", "4d"])
def test_linear_kernel_matches_torch_builtin(batch):
    x = rand(*batch, 24, std=3.0, mean=-0.5, seed=1)
    w = rand(40, 24, std=0.2, seed=2)  # non-square: d_out=40, d_in=24
    assert_close(F.linear(x, w), TF.linear(x, w), tolerance(0.0, F64), "linear vs F.linear")


def test_linear_module_has_weight_out_by_in():
    layer = Linear(24, 40)
    assert [(n, tuple(p.shape)) for n, p in layer.named_parameters()] == [("weight", (40, 24))]


def test_linear_module_uses_given_dtype():
    assert Linear(8, 4, dtype=torch.bfloat16).weight.dtype == torch.bfloat16


def test_linear_loads_torch_nn_linear_state_dict_and_matches_it():
    """The same key and layout as torch.nn.Linear (weight (d_out, d_in)): its state dict loads strictly."""
    torch.manual_seed(0)
    theirs = torch.nn.Linear(24, 40, bias=False, dtype=F64)
    ours = Linear(24, 40, dtype=F64)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x = rand(3, 24)
    with torch.no_grad():
        assert_close(ours(x), theirs(x), tolerance(0.0, F64), "Linear vs torch.nn.Linear")


def test_linear_init_std_and_truncation():
    torch.manual_seed(0)
    d_in, d_out = 512, 256
    w = Linear(d_in, d_out).weight.detach().double()
    std = (2 / (d_in + d_out)) ** 0.5
    # a normal cut at +-3 std has std 0.98659 * std; the sample std of n draws has relative
    # standard error ~ 1/sqrt(2n) = 0.0020 here, so 5 standard errors is 0.01
    assert abs(w.std().item() / (0.98659 * std) - 1) < 5 / (2 * w.numel()) ** 0.5
    assert abs(w.mean().item()) < 5 * std / w.numel() ** 0.5
    assert w.abs().max().item() <= 3 * std
