import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.optim import gradient_clipping
from cs336_basics.testing import tolerance

from ._helpers import F64, assert_close, rand
from .adapters import run_gradient_clipping, run_gradient_clipping_of
from .floors import MaxErrors, tol


def with_grads(norm: float, n: int = 4, frozen: bool = False, dtype=F64) -> list[torch.nn.Parameter]:
    """n parameters whose gradients have global L2 norm `norm`; with frozen, one more without a gradient."""
    grads = [rand(4, 5, seed=10 + i, dtype=F64) * (1 + 3 * i) for i in range(n)]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(4, 5, dtype=dtype))
        p.grad = (g * (norm / total)).to(dtype)
        params.append(p)
    if frozen:
        params.insert(1, torch.nn.Parameter(torch.ones(3, dtype=dtype)))
    return params


def clipped(params) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in params if p.grad is not None])


@pytest.mark.parametrize("case", fixture_names("gradient_clipping"))
def test_gradient_clipping_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_gradient_clipping_of(**fx.kwargs), fx)


BUILTIN_NORMS = {"above": 3.0, "below": 0.5, "far_above": 1e4}


def _ours_and_builtin(norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    ours, theirs = with_grads(norm, frozen=True), with_grads(norm, frozen=True)
    run_gradient_clipping(ours, 1.0)
    torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    return clipped(ours), clipped(theirs)


@pytest.mark.parametrize("norm", BUILTIN_NORMS.values(), ids=BUILTIN_NORMS)
def test_gradient_clipping_matches_torch_builtin(norm):
    assert_close(*_ours_and_builtin(norm), tol("gradient_clipping.f64"), "clipped vs clip_grad_norm_")


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of the comparison with the built-in above, on its inputs
    (`seeds` do not apply)."""
    return MaxErrors.of("gradient_clipping.f64", (_ours_and_builtin(norm) for norm in BUILTIN_NORMS.values()))


def test_gradient_clipping_scales_the_global_norm_to_max_l2_norm():
    params = with_grads(5.0)
    run_gradient_clipping(params, 2.0)
    assert clipped(params).norm().item() == pytest.approx(2.0 * 5.0 / (5.0 + 1e-6), rel=1e-14)


def test_gradient_clipping_keeps_directions():
    params = with_grads(5.0)
    before = clipped(params).clone()
    run_gradient_clipping(params, 2.0)
    assert_close(clipped(params), before * (2.0 / (5.0 + 1e-6)), tolerance(0.0, F64), "clipped vs before * scale")


def test_gradient_clipping_leaves_gradients_below_the_max_unchanged():
    params = with_grads(0.5)
    before = clipped(params).clone()
    run_gradient_clipping(params, 1.0)
    assert_close(clipped(params), before, 0.0, "gradients below max_l2_norm")


def test_gradient_clipping_skips_parameters_without_gradient():
    params = with_grads(3.0, frozen=True)
    run_gradient_clipping(params, 1.0)
    assert params[1].grad is None


def test_gradient_clipping_reads_an_iterator_of_parameters_once():
    # what model.parameters() gives: a generator, empty after one pass
    params, reference = with_grads(3.0, frozen=True), with_grads(3.0, frozen=True)
    run_gradient_clipping((p for p in params), 1e-2)
    run_gradient_clipping(reference, 1e-2)
    assert_close(clipped(params), clipped(reference), 0.0, "clipped through a generator vs through a list")


def test_gradient_clipping_returns_the_norm_before_clipping():
    params = with_grads(7.0)
    assert gradient_clipping(params, 1.0).item() == pytest.approx(7.0, rel=1e-14)
