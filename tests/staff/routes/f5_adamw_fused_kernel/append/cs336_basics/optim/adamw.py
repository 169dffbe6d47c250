def _step(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    with torch.no_grad():
        for group in self.param_groups:
            _check_hyperparameters(group["lr"], group["betas"], group["eps"], group["weight_decay"])
            lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            ps, gs, ms, vs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                ps.append(p); gs.append(p.grad); ms.append(state["m"]); vs.append(state["v"])
                steps.append(torch.tensor(float(state["step"])))
            if ps:
                torch._fused_adamw_(ps, gs, ms, vs, [], steps, lr=lr, beta1=beta1, beta2=beta2,
                                    weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False)
    return loss


AdamW.step = _step
