# hostile sample library_routes: the schedule from torch.optim.lr_scheduler's closed forms, no math.cos
import torch as _torch


def get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    opt = _torch.optim.SGD([_torch.nn.Parameter(_torch.zeros(()))], lr=max_learning_rate)
    if it < warmup_iters:
        return max_learning_rate * it / warmup_iters
    if it >= cosine_cycle_iters:
        return min_learning_rate
    schedule = _torch.optim.lr_scheduler.CosineAnnealingLR(
        opt, T_max=cosine_cycle_iters - warmup_iters, eta_min=min_learning_rate
    )
    schedule.last_epoch = it - warmup_iters
    return schedule._get_closed_form_lr()[0]
