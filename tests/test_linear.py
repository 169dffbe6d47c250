import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import Linear
from cs336_basics.nn import functional as F
from cs336_basics.testing import tolerance

from . import _init_stats as S
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


# Initialisation (CS336 a1 section 3.4.1): weight ~ N(0, sigma^2), sigma^2 = 2 / (d_in + d_out),
# truncated at +-3 sigma; bias (bias=True only) 0. d_in != d_out, so that a std from d_in alone
# (1/sqrt(d_in), or sqrt(2/d_in)) differs from sigma by 21% (12%), against a bound of 0.7%.
# Bounds: tests/_init_stats.py (5 standard errors: a correct init fails with probability 5.7e-7).
INIT_D_IN, INIT_D_OUT = 1024, 256  # 262144 draws
INIT_SIGMA = (2 / (INIT_D_IN + INIT_D_OUT)) ** 0.5


def _init_weight():
    torch.manual_seed(0)
    return S.sample(Linear(INIT_D_IN, INIT_D_OUT).weight)


def test_linear_init_weights_have_mean_zero():
    w = _init_weight()
    assert abs(w.mean().item()) <= S.mean_bound(S.truncated_std(INIT_SIGMA), w.numel())


def test_linear_init_weight_std_is_that_of_sqrt_2_over_d_in_plus_d_out_truncated_at_3_std():
    w = _init_weight()
    ratio = w.std().item() / S.truncated_std(INIT_SIGMA)
    assert abs(ratio - 1) <= S.relative_std_bound(w.numel()), f"std {ratio:.4f} x the truncated normal's"


def test_linear_init_weights_lie_within_3_std():
    w = _init_weight()  # untruncated, 0.27% of 262144 draws (about 700) would lie outside
    assert w.abs().max().item() <= S.CUT * INIT_SIGMA


def test_linear_init_bias_is_zero():
    torch.manual_seed(0)
    assert torch.equal(Linear(24, 40, bias=True).bias.detach(), torch.zeros(40))
