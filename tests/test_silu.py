import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F

from . import adapters
from ._helpers import assert_close, rand
from .floors import MaxErrors, tol


@pytest.mark.parametrize("case", fixture_names("silu"))
def test_silu_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


BUILTIN_SHAPES = {"1d": (9,), "2d": (3, 5), "4d": (2, 3, 4, 5)}


def _ours_and_builtin(batch: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    x = rand(*batch, std=4.0, mean=-1.0)
    return F.silu(x), TF.silu(x)


@pytest.mark.parametrize("batch", BUILTIN_SHAPES.values(), ids=BUILTIN_SHAPES)
def test_silu_kernel_matches_torch_builtin(batch):
    assert_close(*_ours_and_builtin(batch), tol("silu.f64"), "silu vs F.silu")


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of the comparison with the built-in above, on its inputs
    (`seeds` do not apply)."""
    return MaxErrors.of("silu.f64", (_ours_and_builtin(batch) for batch in BUILTIN_SHAPES.values()))
