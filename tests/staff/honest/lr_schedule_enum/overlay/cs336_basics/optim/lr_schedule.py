"""The learning-rate schedule: linear warm-up, cosine annealing, then a floor (Loshchilov & Hutter
2017, SGDR, without restarts; CS336 section 4.4; the LLaMA schedule, Touvron et al. 2023)."""

import enum
import math


class Phase(enum.Enum):
    WARMUP = enum.auto()
    COSINE = enum.auto()
    FLOOR = enum.auto()

    @staticmethod
    def of(it: int, warmup_iters: int, cosine_cycle_iters: int) -> "Phase":
        if it < warmup_iters:
            return Phase.WARMUP
        if it < cosine_cycle_iters:
            return Phase.COSINE
        return Phase.FLOOR


def get_lr_cosine_schedule(
    it: int, max_learning_rate: float, min_learning_rate: float, warmup_iters: int, cosine_cycle_iters: int
) -> float:
    """The learning rate at iteration `it` (T_w = warmup_iters, T_c = cosine_cycle_iters):
        it < T_w:          max_learning_rate * it / T_w                                  (warm-up from 0)
        T_w <= it <= T_c:  min + (1 + cos(pi (it - T_w) / (T_c - T_w))) / 2 * (max - min)  (annealing)
        it > T_c:          min_learning_rate
    so it is 0 at it = 0, max at it = T_w and min from it = T_c on. With T_w = T_c the annealing
    phase is empty: max at it = T_w is not reached and min holds from T_c. In Python floats."""
    if not it >= 0:
        raise ValueError(f"it must be >= 0, got {it!r}")
    if not warmup_iters >= 0:
        raise ValueError(f"warmup_iters must be >= 0, got {warmup_iters!r}")
    if not cosine_cycle_iters >= warmup_iters:
        raise ValueError(
            f"cosine_cycle_iters must be >= warmup_iters={warmup_iters!r} (the cycle includes the warm-up), "
            f"got {cosine_cycle_iters!r}"
        )
    if not 0 <= min_learning_rate <= max_learning_rate:
        raise ValueError(
            f"need 0 <= min_learning_rate <= max_learning_rate, got min_learning_rate={min_learning_rate!r}, "
            f"max_learning_rate={max_learning_rate!r}"
        )
    # BEGIN SOLUTION
    match Phase.of(it, warmup_iters, cosine_cycle_iters):
        case Phase.WARMUP:
            return it / warmup_iters * max_learning_rate
        case Phase.COSINE:
            angle = math.pi * (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
            return min_learning_rate + (max_learning_rate - min_learning_rate) * (1.0 + math.cos(angle)) / 2.0
        case Phase.FLOOR:
            return min_learning_rate
    # END SOLUTION
