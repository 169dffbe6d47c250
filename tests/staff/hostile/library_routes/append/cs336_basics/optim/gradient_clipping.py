# hostile sample library_routes: torch.nn.utils.clip_grad_norm_ without foreach, so no _foreach_*
# operator runs; holders: objects whose .grad is each gradient
class _Holder:
    def __init__(self, grad):
        self.grad = grad


def gradient_clipping(parameters, max_l2_norm, eps=1e-6):
    holders = [_Holder(p.grad) for p in parameters if p.grad is not None]
    return torch.nn.utils.clip_grad_norm_(holders, max_l2_norm, foreach=False)
