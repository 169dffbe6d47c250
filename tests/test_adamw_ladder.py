"""AdamW, rung by rung: the first step's direction, the step count, the m and v updates (read from
optimizer.state[p], where the handout keeps them), lr, the square root of v, each bias correction
alone, where eps goes, where the decay goes, per-group learning rates and the state_dict round trip
(tests/_ladder.py).

The step-1 rungs zero one beta so that the other's correction is seen alone: with beta1 = 0,
m_hat = m = g; with beta2 = 0, v_hat = v = g^2, whatever 1 - beta^t is (t >= 1). With eps 0 and
parameters starting at 0 (no decay: weight_decay 0), theta after one step is -lr * m_hat / sqrt(v_hat)
itself: lr * g / |g| rounds to lr * sign(g) within a few ulps, so relative bounds of 1e-12 leave
room only for rounding."""

import copy

import torch

from ._helpers import rand
from ._ladder import climb_failed, rung
from .adapters import get_adamw_cls

LR = 1e-2
G = torch.tensor([[0.5, -2.0, 3.0], [-0.25, 4.0, -1.5]], dtype=torch.float64)  # |g| != 1: sqrt shows


def one_param(seed: int = 3) -> torch.nn.Parameter:
    return torch.nn.Parameter(rand(4, 6, seed=seed))


def step_with(optimizer, params, grads) -> None:
    for p, g in zip(params, grads, strict=True):
        p.grad = g.clone()
    optimizer.step()


def first_step(lr=LR, betas=(0.9, 0.999), eps=0.0, g=G) -> torch.Tensor:
    """theta after one step from theta = 0 (weight_decay 0): the update itself, -lr * m_hat / (sqrt(v_hat) + eps)."""
    p = torch.nn.Parameter(torch.zeros_like(g))
    step_with(get_adamw_cls()([p], lr=lr, betas=betas, eps=eps, weight_decay=0.0), [p], [g])
    return p.detach()


def in_lr_sign_g(theta: torch.Tensor, lr: float = LR, g: torch.Tensor = G) -> torch.Tensor:
    """theta / (-lr * sign(g)), elementwise: 1 where theta moved by lr against g."""
    return theta / (-lr * torch.sign(g))


def fmt(t: torch.Tensor) -> str:
    return "(" + ", ".join(f"{float(x):.4g}" for x in t.flatten()) + ")"


def ratio_seen(ratios: torch.Tensor, hints: dict[float, str]) -> str:
    """': <hint>' when every ratio equals one hint's value (to 1e-9), else ''."""
    for value, hint in hints.items():
        if torch.allclose(ratios, torch.full_like(ratios, value), rtol=1e-9, atol=0):
            return f": {hint}"
    return ""


@rung(1)
def test_adamw_first_step_moves_each_parameter_against_its_gradient():
    theta = first_step(eps=1e-8)  # betas (0.9, 0.999): an update of ~lr against g
    if bool((torch.sign(theta) == -torch.sign(G)).all()):
        return
    finite = theta.isfinite()
    if not finite.all():
        seen = f"{int((~finite).sum())} of {theta.numel()} entries of theta are NaN or inf, at g = {fmt(G[~finite])}"
        where = (
            "what can be 0 or negative: the denominators 1 - beta^t (0 if t is 0 on the first step) and "
            "sqrt(v_hat) + eps, and v_hat under the square root (v sums g^2: never negative)"
        )
    elif bool((theta == 0).all()):
        seen, where = (
            "theta did not move",
            "m and v hold this step's g before theta is updated; theta changes in place (p.sub_ / p -= ...)",
        )
    else:
        along = int((torch.sign(theta) == torch.sign(G)).sum())
        seen = f"{along} of {theta.numel()} entries moved along their gradient (theta after the step: {fmt(theta)})"
        where = "the sign of the update: theta <- theta - lr * m_hat / (sqrt(v_hat) + eps)"
    climb_failed(f"one step from theta = 0 with gradient g = {fmt(G)}: {seen}", where)


def two_steps(betas=(0.9, 0.99)) -> list[dict]:
    """optimizer.state[p] after gradients g1 = (2, 0), then g2 = (0, -3): each entry of m and v
    then holds one gradient's weight alone."""
    p = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    opt = get_adamw_cls()([p], lr=LR, betas=betas, eps=1e-8, weight_decay=0.0)
    steps = []
    for g in ([2.0, 0.0], [0.0, -3.0]):
        step_with(opt, [p], [torch.tensor(g, dtype=torch.float64)])
        steps.append({k: (v.clone() if torch.is_tensor(v) else v) for k, v in opt.state[p].items()})
    return steps


def state_entry(state: dict, key: str, after: str):
    if key not in state:
        climb_failed(
            f"after the {after} step, optimizer.state[p] has keys {sorted(state)}, no {key!r}",
            "keep step (t), m and v in self.state[p] under those names (the handout's adamw section)",
        )
    return state[key]


@rung(2)
def test_adamw_counts_steps_from_one():
    counts = [float(state_entry(s, "step", after)) for s, after in zip(two_steps(), ("first", "second"), strict=True)]
    if counts != [1.0, 2.0]:
        climb_failed(
            f"optimizer.state[p]['step'] was {counts[0]:g} after the first step and {counts[1]:g} after the second",
            "t counts the steps from 1: state['step'] starts at 0 and grows by 1 per step, before the bias "
            "corrections use it (step 1 divides by 1 - beta^1)",
        )


@rung(3)
def test_adamw_m_is_the_moving_average_of_the_gradients():
    (s1, s2), b1 = two_steps(), 0.9
    m1, m2 = state_entry(s1, "m", "first"), state_entry(s2, "m", "second")
    want1 = torch.tensor([(1 - b1) * 2, 0.0], dtype=torch.float64)
    want2 = torch.tensor([b1 * (1 - b1) * 2, (1 - b1) * -3], dtype=torch.float64)
    # a few roundings of products of beta1, 1 - beta1 and g: 1e-12 relative is room for them only
    if torch.allclose(m1.double(), want1.double(), rtol=1e-12, atol=0) and torch.allclose(
        m2.double(), want2.double(), rtol=1e-12, atol=0
    ):
        return
    climb_failed(
        f"betas (0.9, 0.99), gradients g1 = (2, 0) then g2 = (0, -3): state['m'] was {fmt(m1)} after step 1 "
        f"(want {fmt(want1)} = (1 - beta1) g1) and {fmt(m2)} after step 2 (want {fmt(want2)} = beta1 (1 - beta1) g1 "
        "+ (1 - beta1) g2)",
        "m <- beta1 * m + (1 - beta1) * g, stored in state['m'] in place (not bias-corrected: m_hat is computed "
        "from it)",
    )


@rung(4)
def test_adamw_v_is_the_moving_average_of_the_squared_gradients():
    (s1, s2), b2 = two_steps(), 0.99
    v1, v2 = state_entry(s1, "v", "first"), state_entry(s2, "v", "second")
    want1 = torch.tensor([(1 - b2) * 4, 0.0], dtype=torch.float64)
    want2 = torch.tensor([b2 * (1 - b2) * 4, (1 - b2) * 9], dtype=torch.float64)
    # a few roundings of products of beta2, 1 - beta2 and g^2: 1e-12 relative is room for them only
    if torch.allclose(v1.double(), want1.double(), rtol=1e-12, atol=0) and torch.allclose(
        v2.double(), want2.double(), rtol=1e-12, atol=0
    ):
        return
    climb_failed(
        f"betas (0.9, 0.99), gradients g1 = (2, 0) then g2 = (0, -3): state['v'] was {fmt(v1)} after step 1 "
        f"(want {fmt(want1)} = (1 - beta2) g1^2) and {fmt(v2)} after step 2 (want {fmt(want2)} = beta2 (1 - beta2) "
        "g1^2 + (1 - beta2) g2^2)",
        "v <- beta2 * v + (1 - beta2) * g^2 (elementwise square), stored in state['v'] in place (not "
        "bias-corrected: v_hat is computed from it)",
    )


@rung(5)
def test_adamw_step_is_proportional_to_lr():
    # betas 0: m_hat = g, v_hat = g^2 on step 1, so theta = -lr * sign(g) for any t >= 1
    big, small = first_step(lr=1e-2, betas=(0.0, 0.0)), first_step(lr=1e-3, betas=(0.0, 0.0))
    ratio = big / small
    if torch.allclose(ratio, torch.full_like(ratio, 10.0), rtol=1e-12, atol=0):
        return
    climb_failed(
        f"one step from theta = 0 with lr 1e-2 moved theta by {fmt(big[0])} (first row), with lr 1e-3 by "
        f"{fmt(small[0])}: {float(ratio.median()):.4g} times as far, not 10",
        "the update is lr * m_hat / (sqrt(v_hat) + eps) with lr = group['lr'] as given",
    )


@rung(6)
def test_adamw_divides_m_hat_by_the_square_root_of_v_hat():
    # betas 0: m_hat = g, v_hat = g^2 on step 1; theta = -lr * g / |g| = -lr * sign(g)
    ratios = in_lr_sign_g(first_step(betas=(0.0, 0.0)))
    if torch.allclose(ratios, torch.ones_like(ratios), rtol=1e-12, atol=0):
        return
    as_v = torch.allclose(ratios, 1 / G.abs(), rtol=1e-9, atol=0)
    climb_failed(
        f"betas (0, 0) (so m_hat = g, v_hat = g^2), eps 0, g = {fmt(G)}: one step moved theta by {fmt(ratios)} "
        f"x lr x sign(g), not lr x sign(g){', i.e. lr / |g| = lr * g / v_hat' if as_v else ''}",
        "theta <- theta - lr * m_hat / (sqrt(v_hat) + eps): the square root of v_hat, which has g's size",
    )


@rung(7)
def test_adamw_bias_corrects_m_on_the_first_step():
    # beta2 = 0: v_hat = g^2 whatever its correction; beta1 = 0.9: m = 0.1 g, m_hat = m / (1 - 0.9) = g
    ratios = in_lr_sign_g(first_step(betas=(0.9, 0.0)))
    if torch.allclose(ratios, torch.ones_like(ratios), rtol=1e-12, atol=0):
        return
    hints = {
        0.1: "m_hat = m = 0.1 g, not divided by 1 - beta1^t",
        0.1 / 0.19: "m divided by 1 - beta1^2, not 1 - beta1^1",
    }
    climb_failed(
        f"betas (0.9, 0) (so v_hat = g^2), eps 0: one step moved theta by {fmt(ratios)} x lr x sign(g), not lr x "
        f"sign(g){ratio_seen(ratios, hints)}",
        "m_hat = m / (1 - beta1^t) with t = 1 on the first step: m = (1 - beta1) g, so m_hat = g",
    )


@rung(8)
def test_adamw_bias_corrects_v_on_the_first_step():
    # beta1 = 0: m_hat = g whatever its correction; beta2 = 0.99: v = 0.01 g^2, v_hat = v / (1 - 0.99) = g^2
    ratios = in_lr_sign_g(first_step(betas=(0.0, 0.99)))
    if torch.allclose(ratios, torch.ones_like(ratios), rtol=1e-12, atol=0):
        return
    hints = {
        10.0: "v_hat = v = 0.01 g^2, not divided by 1 - beta2^t",
        1.99**0.5: "v divided by 1 - beta2^2, not 1 - beta2^1",
    }
    climb_failed(
        f"betas (0, 0.99) (so m_hat = g), eps 0: one step moved theta by {fmt(ratios)} x lr x sign(g), not lr x "
        f"sign(g){ratio_seen(ratios, hints)}",
        "v_hat = v / (1 - beta2^t) with t = 1 on the first step: v = (1 - beta2) g^2, so v_hat = g^2",
    )


@rung(9)
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


@rung(10)
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


@rung(11)
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


@rung(12)
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
