import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F

from . import adapters
from ._helpers import assert_close, rand
from .floors import MaxErrors, tol

BATCHES = {"1d": (9,), "2d": (3, 5), "4d": (2, 3, 4, 5)}


@pytest.mark.parametrize("case", fixture_names("gelu"))
def test_gelu_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("batch", BATCHES.values(), ids=BATCHES.keys())
def test_gelu_kernel_matches_torch_builtin(batch, approximate):
    x = rand(*batch, std=4.0, mean=-1.0)
    expected = TF.gelu(x, approximate=approximate)
    assert_close(F.gelu(x, approximate=approximate), expected, tol("gelu.f64"), "gelu vs F.gelu")


def test_gelu_far_left_tail_is_zero_on_the_scale_of_the_input():
    # exact value -7.6e-23 at x = -10; 0.5 x (1 + erf(x / sqrt 2)) gives -0.0 there, as F.gelu does:
    # both are right to within the rounding of the moderate values beside it
    x = torch.tensor([-10.0, -1.0, 0.5, 2.0], dtype=torch.float64)
    assert_close(F.gelu(x), TF.gelu(x), tol("gelu.f64"), "gelu vs F.gelu with x = -10 among moderate inputs")


def measure_floors(seeds=range(50)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of gelu against F.gelu, both forms."""
    floors = MaxErrors()
    for seed in seeds:
        for batch in BATCHES.values():
            x = rand(*batch, std=4.0, mean=-1.0, seed=seed)
            for approximate in ("none", "tanh"):
                floors.keep("gelu.f64", F.gelu(x, approximate=approximate), TF.gelu(x, approximate=approximate))
    return floors
