"""Attention split by head equals the single-process attention (GQA: 8 query heads, 4 kv heads,
RoPE), output and input gradient, with two ranks (the course staff's suite adds 1 and 4). It runs
in the same launch as tests/test_parallel_layers.py (tests/_parallel.py, shared_launch).
Tolerance: tests/floors.py ("parallel.heads"), measured at W = 1, 2, 4 by
test_parallel_layers.measure_floors."""

from . import _parallel as P


def test_parallel_heads_split_equals_one_process():
    P.check_heads_split_equals_one_process(P.WORLD_SIZE)
