"""AdamW, rung by rung: the first step's size, where the decay goes, per-group learning rates and
the state_dict round trip (tests/_ladder.py)."""

import copy

import torch

from ._helpers import rand
from ._ladder import climb_failed, rung
from .adapters import get_adamw_cls

LR = 1e-2


def one_param(seed: int = 3) -> torch.nn.Parameter:
    return torch.nn.Parameter(rand(4, 6, seed=seed))


def step_with(optimizer, params, grads) -> None:
    for p, g in zip(params, grads, strict=True):
        p.grad = g.clone()
    optimizer.step()


@rung(1)
def test_adamw_first_step_moves_each_parameter_by_lr_times_the_sign_of_its_gradient():
    p = one_param()
    start, g = p.detach().clone(), rand(4, 6, seed=4)
    step_with(get_adamw_cls()([p], lr=LR, betas=(0.9, 0.999), eps=0.0, weight_decay=0.0), [p], [g])
    moved = (p.detach() - start) / -torch.sign(g)  # lr each (eps 0)
    if torch.allclose(moved, torch.full_like(moved, LR), rtol=1e-9, atol=0):
        return
    ratio = float(moved.median() / LR)
    hints = {0.1 / 0.999**0.5: "(1 - beta1) / sqrt(1 - beta2): m and v were not divided by 1 - beta^t",
             0.1: "(1 - beta1): m was not bias-corrected", 1 / 0.001**0.5: "1 / sqrt(1 - beta2): v was not bias-corrected",
             -1.0: "the opposite direction: the update is added instead of subtracted"}  # fmt: skip
    seen = next((w for r, w in hints.items() if abs(ratio - r) < 1e-3 * abs(r)), "")
    climb_failed(
        f"from zero state, one step with weight_decay 0 and eps 0 moved the parameters by {ratio:.4g} x lr x sign(g) "
        f"(median){': ' + seen if seen else ''}",
        "step 1: m_hat = g, v_hat = g^2 after bias correction (m / (1 - beta1^t), v / (1 - beta2^t), t "
        "counted from 1), so theta moves by lr * g / |g| = lr * sign(g)",
    )


@rung(2)
def test_adamw_adds_eps_to_the_root_of_v_not_under_it():
    p = one_param()
    start, g = p.detach().clone(), torch.full((4, 6), 1e-3, dtype=torch.float64)
    step_with(get_adamw_cls()([p], lr=LR, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0), [p], [g])
    ratio = float(((start - p.detach()) / LR).median())  # 1e-3 / (1e-3 + 1e-6) = 0.999 (0.969 for eps on sqrt(v))
    if not 0.95 < ratio < 1.0:
        inside = " = 1e-3 / sqrt(1e-6 + 1e-6): eps under the square root" if abs(ratio - 0.5**0.5) < 1e-3 else ""
        climb_failed(
            f"gradients of 1e-3 with eps 1e-6: the first step moved theta by {ratio:.4g} x lr{inside}",
            "theta -= lr * m_hat / (sqrt(v_hat) + eps): eps added to the root, so a small gradient still moves ~lr",
        )


@rung(3)
def test_adamw_decays_the_parameter_not_the_gradient():
    p = one_param()
    start = p.detach().clone()
    opt = get_adamw_cls()([p], lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    step_with(opt, [p], [torch.zeros_like(p)])
    want = start * (1 - LR * 0.1)
    if torch.allclose(p.detach(), want, rtol=1e-12, atol=0):
        return
    l2 = torch.allclose(p.detach(), start - LR * torch.sign(start), rtol=1e-6, atol=0)
    climb_failed(
        "with zero gradients and weight_decay 0.1, one step did not multiply theta by (1 - lr * weight_decay)"
        + (": theta moved by lr * sign(theta), as if weight_decay * theta was added to the gradient" if l2 else ""),
        "decoupled decay: theta -= lr * weight_decay * theta, applied to the parameter, apart from the Adam update",
    )


@rung(4)
def test_adamw_each_param_group_uses_its_own_learning_rate():
    a, b = one_param(3), one_param(5)
    starts, g = (a.detach().clone(), b.detach().clone()), rand(4, 6, seed=4)
    opt = get_adamw_cls()([{"params": [a], "lr": 1e-2}, {"params": [b], "lr": 1e-3}], lr=0.5, weight_decay=0.0)
    step_with(opt, [a, b], [g, g])
    moved = [float(((s - p.detach()) / torch.sign(g)).median()) for p, s in zip((a, b), starts, strict=True)]
    if abs(moved[0] - 1e-2) > 1e-6 or abs(moved[1] - 1e-3) > 1e-7:
        climb_failed(
            f"groups with lr 1e-2 and 1e-3 (default lr 0.5) moved by {moved[0]:.3g} and {moved[1]:.3g} on step 1",
            "read lr (and betas, eps, weight_decay) from each group in self.param_groups, not from the constructor",
        )


@rung(5)
def test_adamw_state_dict_round_trip_continues_exactly():
    p, q = one_param(), one_param()
    opt = get_adamw_cls()([p], lr=LR, weight_decay=0.1)
    for k in range(3):
        step_with(opt, [p], [rand(4, 6, seed=10 + k)])
    with torch.no_grad():
        q.copy_(p)
    resumed = get_adamw_cls()([q], lr=LR, weight_decay=0.1)
    resumed.load_state_dict(copy.deepcopy(opt.state_dict()))  # not sharing m, v with opt
    for k in range(3, 5):
        step_with(opt, [p], [rand(4, 6, seed=10 + k)])
        step_with(resumed, [q], [rand(4, 6, seed=10 + k)])
    if not torch.equal(p.detach(), q.detach()):
        climb_failed(
            "3 steps, state_dict() loaded into a new optimizer, 2 more steps: the parameters differ from 5 "
            f"steps without the stop (max difference {float((p - q).detach().abs().max()):.3g})",
            "keep m, v and the step count in self.state[p] (torch.optim.Optimizer's state_dict saves only that), "
            "not in attributes of your own",
        )
