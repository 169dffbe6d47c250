"""Training: the optimizer, the learning-rate schedule and gradient clipping (the loss,
cross_entropy, is a kernel in cs336_basics.nn.functional)."""

from cs336_basics.optim.adamw import AdamW
from cs336_basics.optim.gradient_clipping import gradient_clipping
from cs336_basics.optim.lr_schedule import get_lr_cosine_schedule

__all__ = ["AdamW", "get_lr_cosine_schedule", "gradient_clipping"]
