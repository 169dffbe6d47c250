"""Every kernel passes gradcheck in float64 (numerical against analytical gradients), softmax also
with -inf entries. Staff-side: gradcheck imports sympy through torch's symbolic shapes (0.4 s)."""

import pytest
import torch

from cs336_basics.nn import functional as F

from ..test_dtypes import KERNELS
from ..test_gradients import _inputs, _masked_logits

pytestmark = pytest.mark.slow  # second tier: numerical gradients of every kernel


@pytest.mark.parametrize("name", KERNELS)
def test_gradcheck_in_float64(name):
    ours, _ = KERNELS[name]
    assert torch.autograd.gradcheck(ours, tuple(_inputs(name)))


def test_softmax_gradcheck_with_masked_entries():
    assert torch.autograd.gradcheck(F.softmax, (_masked_logits(),))


def test_cross_entropy_gradcheck_in_float64():
    x = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(8), dtype=torch.float64).requires_grad_()
    targets = torch.randint(0, 7, (2, 3), generator=torch.Generator().manual_seed(9))
    assert torch.autograd.gradcheck(lambda logits: F.cross_entropy(logits, targets), (x,))
