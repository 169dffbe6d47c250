import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import RMSNorm
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from . import adapters
from ._helpers import F64, assert_close, rand


@pytest.mark.parametrize("case", fixture_names("rmsnorm"))
def test_rmsnorm_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.mark.parametrize("eps", [1e-5, 0.3])
@pytest.mark.parametrize("batch", [(), (5,), (2, 3, 4)], ids=["1d", "2d", "4d"])
def test_rmsnorm_kernel_matches_torch_builtin(batch, eps):
    x = rand(*batch, 24, std=3.0, mean=0.5, seed=1)
    g = rand(24, std=0.5, mean=1.0, seed=2)
    expected = TF.rms_norm(x, (24,), g, eps)
    assert_close(F.rmsnorm(x, g, eps), expected, tolerance(0.0, F64), "rmsnorm vs F.rms_norm")


def test_rmsnorm_module_has_unit_gain():
    norm = RMSNorm(24, eps=1e-6)
    assert [(n, tuple(p.shape)) for n, p in norm.named_parameters()] == [("weight", (24,))]
    assert_close(norm.weight.detach(), torch.ones(24), 0.0, "norm.weight.detach() vs torch.ones(24)")
    assert norm.eps == 1e-6


def test_rmsnorm_init_gain_is_one():
    """CS336 a1 section 3.4.1: RMSNorm's gain starts at 1 (the identity scale)."""
    assert torch.equal(RMSNorm(24).weight.detach(), torch.ones(24))


def test_rmsnorm_loads_torch_nn_rmsnorm_state_dict_and_matches_it():
    """The same key as torch.nn.RMSNorm (weight, the gain): its state dict loads strictly."""
    theirs, ours = torch.nn.RMSNorm(24, eps=1e-5, dtype=F64), RMSNorm(24, dtype=F64)
    with torch.no_grad():
        theirs.weight.mul_(rand(24, seed=3))
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x = rand(3, 24)
    with torch.no_grad():
        assert_close(ours(x), theirs(x), tolerance(0.0, F64), "RMSNorm vs torch.nn.RMSNorm")
