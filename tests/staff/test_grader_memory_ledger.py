"""Staff only: the grader's memory ledger (runner.MemoryLedger): the cgroups of workers graded at
once in one container are promised no more than the container has left, so a worker's own memory
use runs out its own group first and can never be awarded as "the container ran out of memory"."""

from cs336_basics.staff.grader.runner import CONTAINER_SLACK_MB, MemoryLedger

MB = 2**20


def test_grader_memory_ledger_gives_a_lone_worker_what_the_container_has_left():
    mb, inside = MemoryLedger().promise(1, 768 * MB, 1024)
    assert (mb, inside) == (768 - CONTAINER_SLACK_MB, True)


def test_grader_memory_ledger_gives_a_lone_worker_at_most_what_it_asks():
    assert MemoryLedger().promise(1, 4096 * MB, 1024) == (1024, True)


def test_grader_memory_ledger_subtracts_what_live_workers_were_promised():
    ledger = MemoryLedger()
    first, _ = ledger.promise(1, 2048 * MB, 1024)
    second, inside = ledger.promise(2, 2048 * MB, 1024)
    assert first == 1024 and second == 2048 - CONTAINER_SLACK_MB - 1024 and inside
    assert first + second + CONTAINER_SLACK_MB <= 2048


def test_grader_memory_ledger_forgets_a_released_worker():
    ledger = MemoryLedger()
    ledger.promise(1, 2048 * MB, 1024)
    ledger.release(1)
    assert ledger.promise(2, 2048 * MB, 1024) == (1024, True)


def test_grader_memory_ledger_worker_at_the_floor_is_not_inside_the_container_s_room():
    """64 MB at least, even where the container has less left: then a container OOM may be the worker's own."""
    mb, inside = MemoryLedger().promise(1, (CONTAINER_SLACK_MB + 10) * MB, 1024)
    assert mb == 64 and not inside


def test_grader_memory_ledger_a_worker_s_new_promise_replaces_its_old_one():
    ledger = MemoryLedger()
    ledger.promise(1, 2048 * MB, 1024)
    assert ledger.promise(1, 2048 * MB, 1024) == (1024, True)
