"""lr_schedule, rung by rung: 0 at the start, a linear warm-up, the max where the cosine starts, the cosine from max to
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
def test_lr_schedule_warms_up_at_an_even_rate():
    got = [lr(it) for it in range(WARMUP)]
    want = [it / WARMUP * MAX for it in range(WARMUP)]
    if any(abs(g - w) > 1e-12 for g, w in zip(got, want, strict=True)):
        climb_failed(f"warm-up lr(0..9) = {[round(g, 4) for g in got]}, expected 0, 0.1, ..., 0.9",
                     "it / warmup_iters * max_learning_rate for it < warmup_iters (true division)")  # fmt: skip


def _as_cosine_terms(value: float) -> str:
    """`value` written as min + k (max - min), when k is a simple number: what lr(warmup_iters) showed."""
    k = round((value - MIN) / (MAX - MIN), 9)
    return "" if k != round(k, 2) else " = min" if k == 0 else f" = min + {k:g} (max - min)"


@rung(3)
def test_lr_schedule_starts_its_cosine_at_the_max():
    got = lr(WARMUP)
    if abs(got - MAX) > 1e-12:
        climb_failed(
            f"lr({WARMUP}) = {got:.6g}{_as_cosine_terms(got)}, expected the max {MAX}: at it = warmup_iters the "
            f"cosine phase begins with progress (it - warmup_iters) / (cosine_cycle_iters - warmup_iters) = 0",
            "each factor of min + (1 + cos(pi * progress)) / 2 * (max - min) at progress 0: cos(0) = 1, the 1 / 2, the "
            "range max - min (and that the progress subtracts warmup_iters)",
        )


@rung(4)
def test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_the_cycle():
    mid = (WARMUP + CYCLE) // 2
    if abs(lr(mid) - (MAX + MIN) / 2) > 1e-12:
        climb_failed(
            f"lr({mid}) = {lr(mid):.6g}, expected (max + min) / 2 = {(MAX + MIN) / 2}{_cosine_argument(lr(mid), mid)}",
            "min + (1 + cos(pi (it - warmup_iters) / (cosine_cycle_iters - warmup_iters))) / 2 * (max - min)",
        )


def _cosine_argument(value: float, it: int) -> str:
    """The a for which value = min + (1 + cos(a)) / 2 (max - min), when there is one: which angle the
    cosine was given, against pi * 0.5 in the middle of the cycle."""
    c = 2 * (value - MIN) / (MAX - MIN) - 1
    if value == 0.5:
        return ": annealing to 0"
    if not -1 <= c <= 1:
        return ""
    a = math.acos(c)
    want = f"pi * ({it} - {WARMUP}) / ({CYCLE} - {WARMUP}) = pi * {(it - WARMUP) / (CYCLE - WARMUP):g}"
    return f"; {value:.6g} = min + (1 + cos(a)) / 2 (max - min) with a = {a:.4g} = pi * {a / math.pi:.4g}, not {want}"


@rung(5)
def test_lr_schedule_stays_at_min_after_the_cycle():
    after = {it: lr(it) for it in (CYCLE, CYCLE + 1, CYCLE + 7, 3 * CYCLE)}
    if any(abs(v - MIN) > 1e-12 for v in after.values()):
        climb_failed(f"after the cycle lr = {after}, expected {MIN} throughout",
                     "for it >= cosine_cycle_iters return min_learning_rate (the cosine must not go on)")  # fmt: skip
