"""Attention split by head equals the single-process attention (GQA: 8 query heads, 4 kv heads,
RoPE), output and input gradient, with two ranks (the course staff's suite adds 1 and 4). Floor
measured at W = 1, 2, 4: 1.0e-15 (float64)."""

import torch

from cs336_basics.nn import convert, modules
from cs336_basics.nn.parallel import ParallelAttention
from cs336_basics.nn.parallel.launch import launch
from cs336_basics.testing import tolerance

from . import _parallel as P
from ._helpers import assert_close

D, H, KV, SEQ = 32, 8, 4, 6
TOL = tolerance(1.0e-15, torch.float64)


def _rope():
    return modules.RotaryPositionalEmbedding(10000.0, D // H, 64)


def _setup():
    torch.manual_seed(0)
    full = modules.MultiHeadSelfAttention(D, H, KV, rope=_rope(), dtype=torch.float64)
    weights = {k: v for k, v in full.state_dict().items() if not k.startswith("rope")}
    x = torch.randn(2, SEQ, D, dtype=torch.float64)
    dy = torch.randn(2, SEQ, D, dtype=torch.float64)
    return full, weights, x, dy


def _rank(rank, world_size, weights, x, dy):
    m = ParallelAttention(D, H, KV, rope=_rope(), dtype=torch.float64)
    m.load_state_dict(convert.shard_state_dict(weights, convert.sharding_plan(m), rank, world_size), strict=False)
    x = x.clone().requires_grad_()
    with P.counting_collectives() as counts:
        y = m(x)
    (y * dy).sum().backward()
    return y.detach(), x.grad, dict(counts)


def test_parallel_heads_split_equals_one_process(world_size=P.WORLD_SIZE):
    full, weights, x, dy = _setup()
    xg = x.clone().requires_grad_()
    want = full(xg)
    (want * dy).sum().backward()
    y, dx, counts = launch(_rank, world_size, (weights, x, dy))[0]
    assert_close(y, want.detach(), TOL, f"attention output, W={world_size}")
    assert_close(dx, xg.grad, TOL, f"attention input grad, W={world_size}")
    assert counts == ({} if world_size == 1 else {"all_reduce": 1})
