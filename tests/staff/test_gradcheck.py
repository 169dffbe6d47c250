"""Every kernel passes gradcheck in float64 (numerical against analytical gradients)."""

import pytest
import torch

from ..test_dtypes import KERNELS
from ..test_gradients import _inputs


@pytest.mark.parametrize("name", KERNELS)
def test_gradcheck_in_float64(name):
    ours, _ = KERNELS[name]
    assert torch.autograd.gradcheck(ours, tuple(_inputs(name)))
