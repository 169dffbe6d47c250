"""Shared machinery of the tensor-parallel tests: the work each rank does (in its own process,
started by cs336_basics.nn.parallel.launch) and its single-process counterparts.

One launch per world size runs every case on every rank and returns the raw tensors; the tests
then assert one behaviour each on those results. A case is a layer kind in a dtype: its output,
the gradient of its input and of each weight, for a fixed random upstream gradient dy. The
public tests use groups of WORLD_SIZE ranks; the course staff's suite adds 1 and 4, and
PyTorch's DTensor tensor parallelism as a second oracle.
"""

import functools

import pytest
import torch
from torch import nn

from cs336_basics.nn import convert
from cs336_basics.nn.modules import Linear, MultiHeadSelfAttention, RotaryPositionalEmbedding, SwiGLUFFN
from cs336_basics.nn.parallel import (
    ColumnParallelLinear,
    ParallelAttention,
    ParallelSwiGLUFFN,
    RowParallelLinear,
    sharding,
)
from cs336_basics.nn.parallel.collectives import counting_collectives
from cs336_basics.nn.parallel.launch import launch

from ._helpers import assert_close
from .floors import tol

D_MODEL, D_FF, BATCH = 16, 24, (2, 3)  # d_ff and d_model divide by 1, 2 and 4
WORLD_SIZE = 2  # the public tests' group size: the smallest that splits anything
DTYPES = (torch.float32, torch.float64)
# kind: (d_in, d_out, upstream gradient's last dim)
KINDS = {
    "column_gathered": (D_MODEL, D_FF),
    "column_sharded": (D_MODEL, D_FF),
    "row_parallel_input": (D_FF, D_MODEL),
    "row_full_input": (D_FF, D_MODEL),
    "ffn": (D_MODEL, D_FF),
}


def _rand(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def inputs(kind: str) -> dict:
    """Full weights (our state dict keys), input x and upstream gradient dy, in float64."""
    d_in, d_out = KINDS[kind]
    if kind == "ffn":
        w = {
            "w1.weight": _rand(D_FF, D_MODEL, seed=1) * 0.3,
            "w2.weight": _rand(D_MODEL, D_FF, seed=2) * 0.3,
            "w3.weight": _rand(D_FF, D_MODEL, seed=3) * 0.3,
        }
        return {"weights": w, "x": _rand(*BATCH, D_MODEL, seed=4), "dy": _rand(*BATCH, D_MODEL, seed=5)}
    return {
        "weights": {"weight": _rand(d_out, d_in, seed=6) * 0.3},
        "x": _rand(*BATCH, d_in, seed=7),
        "dy": _rand(*BATCH, d_out, seed=8),
    }


def parallel_module(kind: str, **kw) -> nn.Module:
    d_in, d_out = KINDS[kind]
    if kind == "ffn":
        return ParallelSwiGLUFFN(D_MODEL, D_FF, **kw)
    if kind.startswith("column"):
        return ColumnParallelLinear(d_in, d_out, gather_output=kind == "column_gathered", **kw)
    return RowParallelLinear(d_in, d_out, input_is_parallel=kind == "row_parallel_input", **kw)


@functools.cache
def single_process(kind: str, dtype: torch.dtype) -> dict:
    """Output and gradients of our single-process module (Linear or SwiGLUFFN) on the full weights."""
    d_in, d_out = KINDS[kind]
    case = inputs(kind)
    module = SwiGLUFFN(D_MODEL, D_FF, dtype=dtype) if kind == "ffn" else Linear(d_in, d_out, dtype=dtype)
    convert.load_state_dict(module, {k: v.to(dtype) for k, v in case["weights"].items()})
    x = case["x"].to(dtype).requires_grad_()
    y = module(x)
    (y * case["dy"].to(dtype)).sum().backward()
    return {"y": y.detach(), "dx": x.grad, "dw": {k: p.grad for k, p in module.named_parameters()}}


def _slice(t, rank, world_size):
    n = t.shape[-1] // world_size
    return t[..., rank * n : (rank + 1) * n]


def run_case(module: nn.Module, kind: str, dtype, rank: int, world_size: int) -> dict:
    """This rank's output, input gradient, local weight gradients and the collectives issued in
    forward and in backward, for `module` already holding this rank's shard."""
    case = inputs(kind)
    x_full = case["x"].to(dtype)
    x = (_slice(x_full, rank, world_size) if kind == "row_parallel_input" else x_full).clone().requires_grad_()
    dy = case["dy"].to(dtype)
    if kind == "column_sharded":
        dy = _slice(dy, rank, world_size)
    with counting_collectives() as forward_counts:
        y = module(x)
    with counting_collectives() as backward_counts:
        (y * dy).sum().backward()
    return {
        "y": y.detach(),
        "dx": x.grad,
        "dw": {k: p.grad for k, p in module.named_parameters()},
        "forward": dict(forward_counts),
        "backward": dict(backward_counts),
    }


# Attention split by head (tests/test_parallel_heads.py): GQA, 8 query heads on 4 kv heads, RoPE.
HEADS_D, HEADS_H, HEADS_KV, HEADS_SEQ = 32, 8, 4, 6


def heads_rope() -> RotaryPositionalEmbedding:
    return RotaryPositionalEmbedding(10000.0, HEADS_D // HEADS_H, 64)


def heads_case() -> tuple:
    """(the single-process attention, its weights without the RoPE buffers, x, dy), float64, seeded."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        full = MultiHeadSelfAttention(HEADS_D, HEADS_H, HEADS_KV, rope=heads_rope(), dtype=torch.float64)
        x = torch.randn(2, HEADS_SEQ, HEADS_D, dtype=torch.float64)
        dy = torch.randn(2, HEADS_SEQ, HEADS_D, dtype=torch.float64)
    weights = {k: v for k, v in full.state_dict().items() if not k.startswith("rope")}
    return full, weights, x, dy


def rank_heads(rank: int, world_size: int) -> tuple:
    """On one rank: ParallelAttention holding this rank's heads; (output, input grad, collectives)."""
    _, weights, x, dy = heads_case()
    m = ParallelAttention(HEADS_D, HEADS_H, HEADS_KV, rope=heads_rope(), dtype=torch.float64)
    m.load_state_dict(sharding.shard_state_dict(weights, sharding.sharding_plan(m), rank, world_size), strict=True)
    x = x.clone().requires_grad_()
    with counting_collectives() as counts:
        y = m(x)
    (y * dy).sum().backward()
    return y.detach(), x.grad, dict(counts)


def rank_layers(rank: int, world_size: int) -> dict:
    """On one rank: every (kind, dtype) case through our parallel modules."""
    out = {}
    for kind in KINDS:
        for dtype in DTYPES:
            module = parallel_module(kind, dtype=dtype)
            full = {k: v.to(dtype) for k, v in inputs(kind)["weights"].items()}
            convert.load_state_dict(
                module, sharding.shard_state_dict(full, sharding.sharding_plan(module), rank, world_size)
            )
            out[kind, dtype] = run_case(module, kind, dtype, rank, world_size)
    return out


def _run_jobs(rank: int, world_size: int, jobs: tuple) -> dict:
    return {name: fn(rank, world_size) for name, fn in jobs}


@functools.cache
def _jobs_in_one_launch(jobs: tuple, world_size: int) -> list[dict] | None:
    try:
        return launch(_run_jobs, world_size, (jobs,))
    except Exception:  # noqa: BLE001 -- each job then gets a launch of its own, and its own error
        return None


@functools.cache
def _job_alone(fn, world_size: int) -> list:
    return launch(fn, world_size)


def shared_launch(jobs: tuple, name: str, world_size: int) -> list:
    """Each rank's result of the job called `name`, one of `jobs`: (name, fn(rank, world_size))
    pairs, a module constant so that results are cached. Every job runs in one launch (each
    launch forks every rank: ~0.1 s of CPU); if that launch fails, each job runs in a launch of
    its own, so a job that raises fails only the tests that use it, with its own error."""
    together = _jobs_in_one_launch(jobs, world_size)
    return [r[name] for r in together] if together is not None else _job_alone(dict(jobs)[name], world_size)


# The layer checks and the attention split by head (tests/test_parallel_layers.py, _heads.py).
PARTS = (("layers", rank_layers), ("heads", rank_heads))


@functools.cache
def ours(kind: str, world_size: int, dtype: torch.dtype) -> dict:
    """The whole result of our parallel modules for one case: see assemble."""
    return assemble(shared_launch(PARTS, "layers", world_size), kind, dtype, True, plan_of(kind))


def assemble(per_rank: list[dict], kind: str, dtype, sharded_weights: bool, plan: dict | None = None) -> dict:
    """One full result from the ranks' results: outputs and input gradients concatenated along
    the last dim where they are sharded (rank 0's otherwise), weight gradients gathered by `plan`."""
    rs = [r[kind, dtype] for r in per_rank]
    y_sharded = kind == "column_sharded"
    dx_sharded = kind == "row_parallel_input"
    full = {
        "y": torch.cat([r["y"] for r in rs], -1) if y_sharded else rs[0]["y"],
        "dx": torch.cat([r["dx"] for r in rs], -1) if dx_sharded else rs[0]["dx"],
        "forward": rs[0]["forward"],
        "backward": rs[0]["backward"],
    }
    full["dw"] = sharding.gather_state_dict([r["dw"] for r in rs], plan) if sharded_weights else rs[0]["dw"]
    return full


def result_pairs(got: dict, want: dict) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{what: (ours, expected)} of two whole results (see assemble): output, input grad, each weight's grad."""
    pairs = {"output": (got["y"], want["y"]), "input grad": (got["dx"], want["dx"])}
    return pairs | {f"grad of {k}": (got["dw"][k], want["dw"][k]) for k in want["dw"]}


@functools.cache
def plan_of(kind: str) -> dict:
    return sharding.sharding_plan(parallel_module(kind, world_size=1, rank=0))


def multiprocessing_helpers() -> set[int]:
    """The processes multiprocessing keeps for the life of this process: the forkserver and the
    resource tracker, started by the first launch that uses forkserver (or spawn)."""
    from multiprocessing import forkserver, resource_tracker

    pids = {forkserver._forkserver._forkserver_pid, resource_tracker._resource_tracker._pid}
    return {pid for pid in pids if pid is not None}


def child_pids() -> list[int]:
    """The live child processes of this process (Linux: /proc; elsewhere multiprocessing's view),
    multiprocessing's own helpers aside."""
    import multiprocessing as mp
    import os
    from pathlib import Path

    pids = {p.pid for p in mp.active_children()}
    for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
        try:
            pids |= {int(pid) for pid in (task / "children").read_text().split()}
        except OSError:
            pass
    return sorted(pids - multiprocessing_helpers())


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Fails a test after which a process it started is still alive. Processes alive before the
    test are not its own, nor are multiprocessing's forkserver and resource tracker: launch picks
    forkserver when another thread is alive (a previous test's, in a full run), and the server
    outlives the launch that started it."""
    before = set(child_pids())
    yield
    assert sorted(set(child_pids()) - before) == [], "a rank outlived its launch"


# The checks the public tests run with WORLD_SIZE ranks and the staff suite with 1 and 4: each
# test of either calls one of these, never another test.
TOL_SINGLE = {torch.float32: tol("parallel.f32"), torch.float64: tol("parallel.f64")}  # tests/floors.py
# Megatron-LM's operators (Shoeybi et al. 2019, §3): (forward, backward) collectives per pass.
MEGATRON_COLLECTIVES = {
    "column_gathered": ({"all_gather": 1}, {"all_reduce": 1}),
    "column_sharded": ({}, {"all_reduce": 1}),
    "row_parallel_input": ({"all_reduce": 1}, {}),
    "row_full_input": ({"all_reduce": 1}, {"all_gather": 1}),
    "ffn": ({"all_reduce": 1}, {"all_reduce": 2}),  # backward: one f per column-parallel layer (w1, w3)
}


def check_output_equals_single_process(kind: str, dtype: torch.dtype, world_size: int) -> None:
    got, want = ours(kind, world_size, dtype), single_process(kind, dtype)
    assert_close(got["y"], want["y"], TOL_SINGLE[dtype], f"{kind} output, W={world_size}")


def check_input_grad_equals_single_process(kind: str, dtype: torch.dtype, world_size: int) -> None:
    got, want = ours(kind, world_size, dtype), single_process(kind, dtype)
    assert_close(got["dx"], want["dx"], TOL_SINGLE[dtype], f"{kind} input grad, W={world_size}")


def check_weight_grads_gathered_equal_single_process(kind: str, dtype: torch.dtype, world_size: int) -> None:
    got, want = ours(kind, world_size, dtype), single_process(kind, dtype)
    assert got["dw"].keys() == want["dw"].keys()
    for key in want["dw"]:
        assert_close(got["dw"][key], want["dw"][key], TOL_SINGLE[dtype], f"{kind} grad of {key}, W={world_size}")


def check_ffn_forward_issues_exactly_one_all_reduce(world_size: int) -> None:
    for dtype in DTYPES:
        assert ours("ffn", world_size, dtype)["forward"] == {"all_reduce": 1}


def check_collectives_per_pass_are_megatrons(kind: str, world_size: int) -> None:
    got = ours(kind, world_size, torch.float32)
    assert (got["forward"], got["backward"]) == MEGATRON_COLLECTIVES[kind]


def check_heads_split_equals_one_process(world_size: int) -> None:
    """Attention split by head: output and input gradient of the one-process attention, one
    all-reduce in the forward (none with one rank)."""
    full, _, x, dy = heads_case()
    xg = x.clone().requires_grad_()
    want = full(xg)
    (want * dy).sum().backward()
    y, dx, counts = shared_launch(PARTS, "heads", world_size)[0]
    assert_close(y, want.detach(), tol("parallel.heads"), f"attention output, W={world_size}")
    assert_close(dx, xg.grad, tol("parallel.heads"), f"attention input grad, W={world_size}")
    assert counts == ({} if world_size == 1 else {"all_reduce": 1})
