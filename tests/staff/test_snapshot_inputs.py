"""The public snapshot test applies the grader's rule that kernels leave their inputs unchanged:
an in-place SiLU (`x *= sigmoid(x)`) returns the right values but fails, saying why."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F
from tests import adapters
from tests.conftest import Snapshot


def _silu_in_place(x):
    return x.mul_(torch.sigmoid(x))  # right values, written over the input


@pytest.mark.parametrize("case", fixture_names("silu")[:1])
def test_silu_snapshot_fails_a_kernel_that_changes_its_input_in_place(case, monkeypatch):
    snapshot = Snapshot(lambda *_: None)
    fx = snapshot.load(case)
    snapshot.check(adapters.run_silu(**fx.kwargs), fx)  # the reference passes
    monkeypatch.setattr(F, "silu", _silu_in_place)
    fx = snapshot.load(case)
    with pytest.raises(pytest.fail.Exception, match=r"changed its input in_features in place"):
        snapshot.check(adapters.run_silu(**fx.kwargs), fx)
