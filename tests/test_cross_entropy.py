import math

import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F
from cs336_basics.testing import UNIT_ROUNDOFF

from ._helpers import assert_close, rand
from .adapters import run_cross_entropy
from .floors import MaxErrors, tol

BATCHES = {"1d": (), "2d": (7,), "4d": (2, 3, 4)}
# (std, mean) of the logits -> the floor of the loss against the built-in: logits near 1000 get
# their own, since m + log(sum(exp(x - m))) - x[t] (exact in real arithmetic) rounds m + lse at ulp(1000)
LOGITS = {"moderate": (3.0, 0.5), "huge": (1e4, 0.0), "offset": (2.0, 1000.0)}
LOSS_FLOOR = {"moderate": "cross_entropy.f64", "huge": "cross_entropy.f64", "offset": "cross_entropy.f64_offset"}


def targets(batch: tuple[int, ...], vocab_size: int, seed: int = 2) -> torch.Tensor:
    return torch.randint(0, vocab_size, batch, generator=torch.Generator().manual_seed(seed))


def builtin(inputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return TF.cross_entropy(inputs.reshape(-1, inputs.shape[-1]), target.reshape(-1))


@pytest.mark.parametrize("case", fixture_names("cross_entropy"))
def test_cross_entropy_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_cross_entropy(**fx.kwargs), fx)


def logits(batch: tuple[int, ...], regime: str, seed: int = 1) -> torch.Tensor:
    std, mean = LOGITS[regime]
    return rand(*batch, 11, std=std, mean=mean, seed=seed)


@pytest.mark.parametrize("regime", LOGITS)
@pytest.mark.parametrize("batch", BATCHES.values(), ids=BATCHES.keys())
def test_cross_entropy_kernel_matches_torch_builtin(batch, regime):
    x, t = logits(batch, regime), targets(batch, 11)
    assert_close(F.cross_entropy(x, t), builtin(x, t), tol(LOSS_FLOOR[regime]), "cross_entropy vs F.cross_entropy")


def gradients(batch: tuple[int, ...], seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """d loss / d logits of ours and of the built-in, on moderate logits."""
    x, t = logits(batch, "moderate", seed).requires_grad_(), targets(batch, 11, seed + 1)
    (ours,) = torch.autograd.grad(F.cross_entropy(x, t), x)
    (theirs,) = torch.autograd.grad(builtin(x, t), x)
    return ours, theirs


@pytest.mark.parametrize("batch", [(7,), (2, 3, 4)], ids=["2d", "4d"])
def test_cross_entropy_gradient_matches_torch_builtin(batch):
    assert_close(*gradients(batch), tol("cross_entropy.grad_f64"), "d cross_entropy / d inputs vs F.cross_entropy's")


def test_cross_entropy_of_equal_logits_is_log_vocab_size():
    x = torch.full((3, 5, 40), 2.5, dtype=torch.float64)
    assert F.cross_entropy(x, targets((3, 5), 40)).item() == pytest.approx(math.log(40), rel=1e-15)


def test_cross_entropy_of_logits_of_1e4_is_finite_and_exact():
    # one row's target is its max (loss 0), the other's is 2e4 below it (loss 2e4): no exp overflow, no log(0)
    x = torch.tensor([[1e4, -1e4, 0.0], [1e4, -1e4, 0.0]])
    out = F.cross_entropy(x, torch.tensor([0, 1]))
    assert torch.isfinite(out) and out.item() == 1e4


def test_cross_entropy_half_inputs_give_the_loss_rounded_once_to_their_dtype():
    x, t = rand(4, 6, 50, std=3.0, seed=4, dtype=torch.bfloat16), targets((4, 6), 50)
    # computed in float32, the loss is rounded to bfloat16 once: a relative error of at most 2^-9
    assert_close(
        F.cross_entropy(x, t),
        builtin(x.double(), t).to(torch.bfloat16),
        UNIT_ROUNDOFF[torch.bfloat16],
        "bfloat16 cross_entropy vs the float64 built-in",
    )


def test_cross_entropy_gradient_of_huge_logits_is_finite():
    x = (rand(4, 9, std=1e4, seed=6)).requires_grad_()
    (grad,) = torch.autograd.grad(F.cross_entropy(x, targets((4,), 9)), x)
    assert torch.isfinite(grad).all()


def measure_floors(seeds=range(50)) -> dict[str, float]:
    """{floor name: max scaled error over `seeds`} of the comparisons with the built-in above."""
    floors = MaxErrors()
    for seed in seeds:
        for batch in BATCHES.values():
            for regime, name in LOSS_FLOOR.items():
                x, t = logits(batch, regime, seed), targets(batch, 11, seed + 1)
                floors.keep(name, F.cross_entropy(x, t), builtin(x, t))
            if batch:
                floors.keep("cross_entropy.grad_f64", *gradients(batch, seed))
    return floors
