import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.testing import tolerance

from ._helpers import F64, assert_close, rand
from .adapters import get_adamw_cls, run_adamw_steps

# torch.optim.AdamW is not run here: stepping it imports torch._dynamo, a second of CPU more than
# these tests take. The fixtures (adamw_f64_zero_eps: float64, eps 0, no decay) hold what it gives,
# and the staff suite compares the reference with it over 200 steps.


def params(dtype=F64) -> list[torch.nn.Parameter]:
    return [torch.nn.Parameter(rand(5, 7, seed=3, dtype=dtype)), torch.nn.Parameter(rand(7, seed=4, dtype=dtype))]


def optimize(cls, steps: int, dtype=F64, zero_grads: bool = False, **hyper) -> torch.Tensor:
    """`steps` steps of cls on params() with seeded N(0, 1) gradients (or zeros); the parameters after."""
    ps = params(dtype)
    optimizer = cls(ps, **hyper)
    gen = torch.Generator().manual_seed(5)
    for _ in range(steps):
        for p in ps:
            g = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(dtype)
            p.grad = torch.zeros_like(p) if zero_grads else g
        optimizer.step()
    return torch.cat([p.detach().reshape(-1) for p in ps])


@pytest.mark.parametrize("case", fixture_names("adamw"))
def test_adamw_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_adamw_steps(**fx.kwargs), fx)


def test_adamw_decays_weights_by_lr_times_weight_decay_when_gradients_are_zero():
    hyper = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    ours = optimize(get_adamw_cls(), 200, zero_grads=True, **hyper)
    start = torch.cat([p.detach().reshape(-1) for p in params()])
    assert_close(ours, start * (1 - 1e-2 * 0.1) ** 200, tolerance(2.0**-53 * 200, F64), "AdamW vs theta (1 - lr wd)^t")


def test_adamw_keeps_step_and_moments_per_parameter():
    ps = params()
    optimizer = get_adamw_cls()(ps, lr=1e-3)
    for _ in range(3):
        for p in ps:
            p.grad = torch.ones_like(p)
        optimizer.step()
    for p in ps:
        state = optimizer.state[p]
        assert int(state["step"]) == 3
        assert state["m"].shape == p.shape and state["v"].shape == p.shape


def test_adamw_state_dict_round_trip_resumes_exactly():
    def grads(ps, step):
        for i, p in enumerate(ps):
            p.grad = rand(*p.shape, seed=100 * step + i)

    whole, first = params(), params()
    opt_whole, opt_first = get_adamw_cls()(whole, lr=1e-2), get_adamw_cls()(first, lr=1e-2)
    for step in range(10):
        grads(whole, step)
        opt_whole.step()
    for step in range(5):
        grads(first, step)
        opt_first.step()
    resumed = [torch.nn.Parameter(p.detach().clone()) for p in first]
    opt_resumed = get_adamw_cls()(resumed, lr=0.5)  # the loaded state dict brings lr back
    opt_resumed.load_state_dict(opt_first.state_dict())
    for step in range(5, 10):
        grads(resumed, step)
        opt_resumed.step()
    for a, b in zip(resumed, whole, strict=False):
        assert_close(a.detach(), b.detach(), 0.0, "resumed vs uninterrupted parameters")


def test_adamw_param_groups_use_their_own_hyperparameters():
    a, b = params()
    grouped = [torch.nn.Parameter(a.detach().clone()), torch.nn.Parameter(b.detach().clone())]
    opt = get_adamw_cls()(
        [{"params": [grouped[0]], "lr": 1e-2}, {"params": [grouped[1]], "weight_decay": 0.5}], lr=1e-3
    )
    opt_a, opt_b = get_adamw_cls()([a], lr=1e-2), get_adamw_cls()([b], lr=1e-3, weight_decay=0.5)
    for step in range(4):
        for p, q in zip(grouped, (a, b), strict=False):
            p.grad = q.grad = rand(*p.shape, seed=step)
        opt.step(), opt_a.step(), opt_b.step()
    assert_close(grouped[0].detach(), a.detach(), 0.0, "group 0 vs its own optimizer")
    assert_close(grouped[1].detach(), b.detach(), 0.0, "group 1 vs its own optimizer")


def test_adamw_leaves_a_parameter_without_gradient_untouched():
    ps = params()
    before = ps[1].detach().clone()
    optimizer = get_adamw_cls()(ps, lr=1e-2, weight_decay=0.1)
    ps[0].grad = torch.ones_like(ps[0])
    optimizer.step()
    assert_close(ps[1].detach(), before, 0.0, "the parameter without a gradient")
    assert len(optimizer.state[ps[1]]) == 0


def test_adamw_step_returns_the_closure_s_loss():
    ps = params()
    optimizer = get_adamw_cls()(ps, lr=1e-2)

    def closure():
        optimizer.zero_grad()
        loss = sum((p**2).sum() for p in ps)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert loss is not None and ps[0].grad is not None
