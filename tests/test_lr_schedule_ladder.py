"""lr_schedule, rung by rung: 0 at the start, a linear warm-up to the max, the cosine from max to
min over the cycle, min after it (tests/_ladder.py). max 1.0, min 0.2, warm-up 10, cycle 30 (min != max / warm-up: no two mistakes give one lr(0))."""

import math

from cs336_basics import optim

from ._ladder import climb_failed, rung

MAX, MIN, WARMUP, CYCLE = 1.0, 0.2, 10, 30


def lr(it: int) -> float:
    return float(optim.get_lr_cosine_schedule(it, MAX, MIN, WARMUP, CYCLE))


@rung(1)
def test_lr_schedule_is_zero_at_iteration_zero():
    if lr(0) != 0.0:
        seen = {MIN: ": min_learning_rate", MAX / WARMUP: ": one warm-up step, (it + 1) / warmup_iters"}.get(lr(0), "")
        climb_failed(f"lr(0) = {lr(0):.6g}{seen}", "warm-up is it / warmup_iters * max_learning_rate: 0 at it = 0")


@rung(2)
def test_lr_schedule_warms_up_at_an_even_rate_to_the_max():
    got = [lr(it) for it in range(WARMUP + 1)]
    want = [it / WARMUP * MAX for it in range(WARMUP + 1)]
    if any(abs(g - w) > 1e-12 for g, w in zip(got, want, strict=True)):
        climb_failed(f"warm-up lr(0..10) = {[round(g, 4) for g in got]}, expected 0, 0.1, ..., 1",
                     "it / warmup_iters * max_learning_rate for it < warmup_iters, max at it = warmup_iters")  # fmt: skip


@rung(3)
def test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_the_cycle():
    mid = (WARMUP + CYCLE) // 2
    if abs(lr(mid) - (MAX + MIN) / 2) > 1e-12:
        whole = MIN + 0.5 * (1 + math.cos(math.pi * mid / CYCLE)) * (MAX - MIN)
        seen = {round(whole, 9): ": the cosine over it / cosine_cycle_iters, warm-up included", 0.5: ": annealing to 0"}
        climb_failed(
            f"lr({mid}) = {lr(mid):.6g}, expected (max + min) / 2 = {(MAX + MIN) / 2}{seen.get(round(lr(mid), 9), '')}",
            "min + (1 + cos(pi (it - warmup_iters) / (cosine_cycle_iters - warmup_iters))) / 2 * (max - min)",
        )


@rung(4)
def test_lr_schedule_stays_at_min_after_the_cycle():
    after = {it: lr(it) for it in (CYCLE, CYCLE + 1, CYCLE + 7, 3 * CYCLE)}
    if any(abs(v - MIN) > 1e-12 for v in after.values()):
        climb_failed(f"after the cycle lr = {after}, expected {MIN} throughout",
                     "for it >= cosine_cycle_iters return min_learning_rate (the cosine must not go on)")  # fmt: skip
