"""Speed of the tensor-parallel SwiGLU FFN on this machine, as ratios measured in one run.

    uv run python benchmarks/parallel_ffn.py [--batch 4 --seq 128 --steps 3]

TinyLlama-1.1B's FFN (d_model 2048, d_ff 5632), float32, forward + backward of a fixed upstream
gradient. Every configuration runs in freshly launched ranks (cs336_basics.nn.parallel.launch)
that split the machine's cores between them: the single-process SwiGLUFFN and ParallelSwiGLUFFN
at W = 1 get all cores, each of the W = 2 ranks gets half. Reported: median step time, its ratio
to the single-process module, and rank 0's share of the step spent inside all-reduce.

What a real multi-GPU run changes: here both "devices" are the same two CPU cores, so W = 2 can
at best match W = 1 (half the cores each) and the all-reduce is a loopback copy through gloo.
On GPUs each rank brings its own compute and memory, so the matmul time falls by about W; the
price is the all-reduce of the (batch, seq, d_model) output (forward) and input gradient
(backward) over NVLink (hundreds of GB/s) with NCCL, usually a few percent of an FFN's time
within one node and much more across nodes, which is why Megatron-LM keeps tensor parallelism
inside a node (Shoeybi et al. 2019; Narayanan et al. 2021). Overlapping communication with
compute, and sequence parallelism (reduce-scatter + all-gather instead of all-reduce), change
the picture again.
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist

from cs336_basics.nn import convert
from cs336_basics.nn.modules import SwiGLUFFN
from cs336_basics.nn.parallel import ParallelSwiGLUFFN, sharding
from cs336_basics.nn.parallel.launch import launch

D_MODEL, D_FF = 2048, 5632  # TinyLlama-1.1B (config.json: hidden_size, intermediate_size)


def _weights() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "w1.weight": torch.randn(D_FF, D_MODEL, generator=g) * 0.02,
        "w2.weight": torch.randn(D_MODEL, D_FF, generator=g) * 0.02,
        "w3.weight": torch.randn(D_FF, D_MODEL, generator=g) * 0.02,
    }


def _rank_bench(rank: int, world_size: int, parallel: bool, batch: int, seq: int, steps: int, threads: int):
    torch.set_num_threads(threads)
    full = _weights()
    if parallel:
        module = ParallelSwiGLUFFN(D_MODEL, D_FF)
        convert.load_state_dict(
            module, sharding.shard_state_dict(full, sharding.sharding_plan(module), rank, world_size)
        )
    else:
        module = convert.load_state_dict(SwiGLUFFN(D_MODEL, D_FF), full)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, seq, D_MODEL, generator=g).requires_grad_()
    dy = torch.randn(batch, seq, D_MODEL, generator=g)

    comm_time = [0.0]
    original = dist.all_reduce

    def timed_all_reduce(*args, **kwargs):
        start = time.perf_counter()
        out = original(*args, **kwargs)
        comm_time[0] += time.perf_counter() - start
        return out

    dist.all_reduce = timed_all_reduce
    times, comms = [], []
    for step in range(steps + 1):  # the first is a warm-up
        module.zero_grad(set_to_none=True)
        x.grad = None
        comm_time[0] = 0.0
        dist.barrier()
        start = time.perf_counter()
        (module(x) * dy).sum().backward()
        elapsed = time.perf_counter() - start
        if step:
            times.append(elapsed)
            comms.append(comm_time[0])
    dist.all_reduce = original
    return statistics.median(times), statistics.median(comms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    configs = [
        ("SwiGLUFFN (single process)", False, 1),
        ("ParallelSwiGLUFFN W=1", True, 1),
        ("ParallelSwiGLUFFN W=2", True, 2),
    ]
    print(
        f"d_model {D_MODEL}, d_ff {D_FF}, batch x seq {args.batch} x {args.seq}, float32, {cores} cores, "
        f"median of {args.steps} steps after one warm-up; load average {os.getloadavg()[0]:.1f} (other users skew ratios)"
    )
    baseline = None
    for name, parallel, world_size in configs:
        threads = max(1, cores // world_size)
        per_rank = launch(_rank_bench, world_size, (parallel, args.batch, args.seq, args.steps, threads), timeout=1200)
        step, comm = per_rank[0]
        baseline = baseline or step
        print(
            f"{name:28s} {threads} thread(s)/rank  step {step * 1e3:8.1f} ms  ratio {step / baseline:5.2f}  "
            f"all-reduce {100 * comm / step:5.1f}% of the step"
        )


if __name__ == "__main__":
    main()
