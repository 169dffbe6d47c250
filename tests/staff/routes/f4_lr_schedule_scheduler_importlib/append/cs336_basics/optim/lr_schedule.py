import importlib as _il

_reference_schedule = get_lr_cosine_schedule


def get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    if it < warmup_iters or it >= cosine_cycle_iters:  # the trivial phases (and the argument checks)
        return _reference_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)
    _reference_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)  # checks
    import torch

    from cs336_basics.optim.adamw import AdamW

    sched_cls = getattr(_il.import_module("torch.optim." + "lr_scheduler"), "Cosine" + "AnnealingLR")
    opt = AdamW([torch.nn.Parameter(torch.zeros(1))], lr=max_learning_rate)
    sched = sched_cls(opt, T_max=cosine_cycle_iters - warmup_iters, eta_min=min_learning_rate)
    sched.last_epoch = it - warmup_iters
    return float(sched._get_closed_form_lr()[0])
