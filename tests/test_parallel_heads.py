"""Attention split by head equals the single-process attention (GQA: 8 query heads, 4 kv heads,
RoPE), output and input gradient, with two ranks (the course staff's suite adds 1 and 4). It runs
in the same launch as tests/test_parallel_layers.py (tests/_parallel.py, shared_launch).
Tolerance: tests/floors.py ("parallel.heads"), measured at W = 1, 2, 4 by
test_parallel_layers.measure_floors."""

from . import _parallel as P
from ._helpers import assert_close
from .floors import tol


def test_parallel_heads_split_equals_one_process(world_size=P.WORLD_SIZE):
    full, _, x, dy = P.heads_case()
    xg = x.clone().requires_grad_()
    want = full(xg)
    (want * dy).sum().backward()
    y, dx, counts = P.shared_launch(P.PARTS, "heads", world_size)[0]
    assert_close(y, want.detach(), tol("parallel.heads"), f"attention output, W={world_size}")
    assert_close(dx, xg.grad, tol("parallel.heads"), f"attention input grad, W={world_size}")
    assert counts == ({} if world_size == 1 else {"all_reduce": 1})
