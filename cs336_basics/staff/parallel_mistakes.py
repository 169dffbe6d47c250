"""Proposed catalogue of tensor-parallel mistakes (staff only; not yet wired into the grader or
the case registry). Each is a small wrong version of one piece of cs336_basics.nn.parallel; its
docstring says what goes wrong and which test of tests/test_parallel_layers.py catches it
(checked at W = 2 by `uv run python -m cs336_basics.staff.parallel_mistakes`).

MISTAKES maps a name to (the object it stands in for, the wrong object). The objects are
classes or functions of the same signature, for monkeypatching inside each rank.
"""

import torch
from torch import Tensor

from cs336_basics.nn import convert
from cs336_basics.nn import functional as F
from cs336_basics.nn.parallel import comm
from cs336_basics.nn.parallel.row import RowParallelLinear
from cs336_basics.nn.parallel.swiglu import ParallelSwiGLUFFN

_shard_state_dict = convert.shard_state_dict  # the right one, kept before any patching


def shard_along_wrong_axis(state_dict, plan, rank, world_size):
    """Wrong shard axis: column-parallel weights split along d_in and row-parallel along d_out
    (the transpose of Megatron's). With d_in != d_out the shard does not fit the layer and
    loading fails with a shape error; with square weights it loads, and every output is wrong by
    O(1) (output tests, W >= 2)."""
    flipped = {k: (None if d is None else 1 - d) for k, d in plan.items()}
    return _shard_state_dict(state_dict, flipped, rank, world_size)


class RowWithoutAllReduce(RowParallelLinear):
    """Missing all-reduce: the row-parallel layer returns its own partial product x_r W_r^T, one
    of the W terms of the sum. Right at W = 1, wrong by O(1) at W >= 2 (row and FFN output
    tests); the FFN's forward then issues no collective (collective count test)."""

    def forward(self, x: Tensor) -> Tensor:
        if not self.input_is_parallel:
            x = comm.scatter_to_parallel_region(x, self.group)
        return F.linear(x, self.weight)


class FFNAllReduceAfterW1(ParallelSwiGLUFFN):
    """All-reduce in the wrong place: w1's output is summed over ranks before SiLU, as if it
    were a partial sum. But each rank's w1 output holds *different* hidden units (columns of
    W1 x), not partial sums of the same ones: the sum mixes unit j of every rank. Wrong by O(1)
    at W >= 2 (FFN output), and two all-reduces per forward (collective count)."""

    def forward(self, x: Tensor) -> Tensor:
        act = F.get_activation(self.activation)
        gate = comm.reduce_from_parallel_region(self.w1(x), self.w1.group)  # wrong: mixes units
        return self.w2(act(gate) * self.w3(x))


class FFNGatherBeforeProduct(ParallelSwiGLUFFN):
    """Gathering w1's (and w3's) output before the product: both column-parallel layers
    all-gather to the full d_ff, the product is formed on every rank, and w2 takes the full
    input and keeps its slice. The numbers are right; the work is not: two all-gathers of
    (..., d_ff) and a redundant full-width product on every rank, then the all-reduce.
    Only the collective count catches it (forward: 2 all-gathers + 1 all-reduce, not 1)."""

    def forward(self, x: Tensor) -> Tensor:
        act = F.get_activation(self.activation)
        gate = comm.gather_from_parallel_region(self.w1(x), self.w1.group)  # (..., d_ff)
        up = comm.gather_from_parallel_region(self.w3(x), self.w3.group)  # (..., d_ff)
        hidden = comm.scatter_to_parallel_region(act(gate) * up, self.w2.group)  # (..., d_ff / W)
        return self.w2(hidden)


class _CopyWithoutBackwardAllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # wrong: each rank keeps only its shard's contribution


def copy_without_backward_all_reduce(x: Tensor, group=None) -> Tensor:
    """All-reduce in backward missing (f's backward is the identity): the forward is right, but
    each rank's input gradient is only its own shard's contribution, sum_r of which is the true
    gradient. Wrong by O(1) at W >= 2 (column and FFN input grad tests; gradients of anything
    upstream, e.g. an RMSNorm's weight, would be wrong too); backward issues no all-reduce."""
    return x if comm._group_size(group) == 1 else _CopyWithoutBackwardAllReduce.apply(x, group)


class _ReduceAlsoInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm._all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return comm._all_reduce(grad, ctx.group), None  # wrong: grad is already replicated


def reduce_also_in_backward(x: Tensor, group=None) -> Tensor:
    """g all-reduces in backward too: the output gradient is already the same on every rank, so
    summing it multiplies every upstream gradient by W. Output right, weight and input
    gradients W times too large (gradient tests, W >= 2)."""
    return x if comm._group_size(group) == 1 else _ReduceAlsoInBackward.apply(x, group)


# name: (the wrong object, where it goes: "module:attribute" of every name it replaces)
MISTAKES = {
    "wrong_shard_axis": (shard_along_wrong_axis, ["cs336_basics.nn.convert:shard_state_dict"]),
    "row_missing_all_reduce": (
        RowWithoutAllReduce,
        ["cs336_basics.nn.parallel.swiglu:RowParallelLinear", "cs336_basics.nn.parallel:RowParallelLinear"],
    ),
    "ffn_all_reduce_after_w1": (FFNAllReduceAfterW1, ["cs336_basics.nn.parallel:ParallelSwiGLUFFN"]),
    "ffn_gather_before_product": (FFNGatherBeforeProduct, ["cs336_basics.nn.parallel:ParallelSwiGLUFFN"]),
    "f_backward_missing_all_reduce": (
        copy_without_backward_all_reduce,
        ["cs336_basics.nn.parallel.column:copy_to_parallel_region"],
    ),
    "g_all_reduce_in_backward": (reduce_also_in_backward, ["cs336_basics.nn.parallel.row:reduce_from_parallel_region"]),
}


def _patch(name: str, extra_modules=()) -> None:
    """Put mistake `name` in place in this process (and under the same attribute in extra_modules)."""
    import importlib

    wrong, targets = MISTAKES[name]
    for target in targets:
        module, attr = target.split(":")
        for m in (importlib.import_module(module), *extra_modules):
            if hasattr(m, attr):
                setattr(m, attr, wrong)


def _rank_with_mistake(rank: int, world_size: int, name: str):
    from tests import _parallel as P

    _patch(name, extra_modules=(P,))
    try:
        return P.rank_ours(rank, world_size)
    except Exception as e:  # noqa: BLE001 -- a mistake that raises is caught too
        return f"{type(e).__name__}: {str(e)[:120]}"


def check(world_size: int = 2) -> dict[str, list[str]]:
    """{mistake: the checks of tests/test_parallel_layers.py it fails at world_size}."""
    from cs336_basics.nn.parallel.launch import launch
    from cs336_basics.testing import compare
    from tests import _parallel as P
    from tests.test_parallel_layers import COLLECTIVES, TOL_SINGLE

    caught = {}
    for name in MISTAKES:
        results = launch(_rank_with_mistake, world_size, (name,), timeout=60)
        if isinstance(results[0], str):
            caught[name] = [f"raises {results[0]}"]
            continue
        fails = []
        for kind in P.KINDS:
            for dtype in P.DTYPES:
                got, want = P.assemble(results, kind, dtype, True, P.plan_of(kind)), P.single_process(kind, dtype)
                pairs = {"output": (got["y"], want["y"]), "input grad": (got["dx"], want["dx"])}
                pairs |= {f"grad {k}": (got["dw"][k], want["dw"][k]) for k in want["dw"]}
                fails += [f"{kind} {what}" for what, (a, b) in pairs.items() if not compare(a, b, TOL_SINGLE[dtype]).ok]
            got = P.assemble(results, kind, torch.float32, True, P.plan_of(kind))
            if (got["forward"], got["backward"]) != COLLECTIVES[kind]:
                fails.append(f"{kind} collectives {got['forward']} / {got['backward']}")
        caught[name] = sorted(set(fails))
    return caught


if __name__ == "__main__":
    for name, fails in check().items():
        print(f"{name}: {'NOT CAUGHT' if not fails else '; '.join(fails)}")
