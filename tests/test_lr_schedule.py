import math

import pytest

from cs336_basics.fixture_io import fixture_names

from .adapters import run_get_lr_cosine_schedule, run_lr_schedule_at

MAX, MIN, WARMUP, CYCLE = 1e-3, 1e-4, 10, 110  # the annealing phase is 100 iterations


def lr(it: int, warmup: int = WARMUP, cycle: int = CYCLE, max_lr: float = MAX, min_lr: float = MIN) -> float:
    return run_get_lr_cosine_schedule(it, max_lr, min_lr, warmup, cycle)


@pytest.mark.parametrize("case", fixture_names("lr_schedule"))
def test_lr_schedule_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_lr_schedule_at(**fx.kwargs), fx)


def test_lr_schedule_starts_at_zero():
    assert lr(0) == 0.0


def test_lr_schedule_warms_up_in_equal_steps_to_max():
    assert lr(WARMUP // 2) == pytest.approx(MAX / 2, rel=1e-15)
    assert lr(1) == pytest.approx(MAX / WARMUP, rel=1e-15)
    assert lr(WARMUP) == MAX


def test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_annealing():
    assert lr((WARMUP + CYCLE) // 2) == pytest.approx((MAX + MIN) / 2, rel=1e-15)


def test_lr_schedule_follows_the_cosine_a_quarter_into_annealing():
    # cos(pi / 4) = sqrt(2) / 2: (1 + sqrt(2)/2) / 2 of the way from min to max
    assert lr(WARMUP + 25) == pytest.approx(MIN + (1 + math.sqrt(0.5)) / 2 * (MAX - MIN), rel=1e-15)


@pytest.mark.parametrize("it", [CYCLE, CYCLE + 1, 10 * CYCLE])
def test_lr_schedule_is_min_from_the_end_of_the_cycle_on(it):
    assert lr(it) == pytest.approx(MIN, rel=1e-15)


def test_lr_schedule_rises_during_warm_up_and_falls_after():
    values = [lr(it) for it in range(CYCLE + 5)]
    assert all(a < b for a, b in zip(values[:WARMUP], values[1 : WARMUP + 1], strict=False))
    assert all(a > b for a, b in zip(values[WARMUP:CYCLE], values[WARMUP + 1 : CYCLE + 1], strict=False))


def test_lr_schedule_without_warm_up_starts_at_max():
    assert lr(0, warmup=0) == MAX


def test_lr_schedule_with_warm_up_as_long_as_the_cycle_drops_to_min_at_its_end():
    assert lr(WARMUP - 1, warmup=WARMUP, cycle=WARMUP) == pytest.approx(MAX * (WARMUP - 1) / WARMUP, rel=1e-15)
    assert lr(WARMUP, warmup=WARMUP, cycle=WARMUP) == MIN
