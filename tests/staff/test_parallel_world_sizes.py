"""The public tensor-parallel checks (tests/test_parallel_*.py, two ranks) repeated with groups
of 1 and 4 ranks, and our parallel layers against PyTorch's DTensor tensor parallelism
(`parallelize_module` with ColwiseParallel / RowwiseParallel on torch.nn.Linear) at 1, 2 and 4.

Staff-side because each group size is another launch, and DTensor imports torch._dynamo (seconds
of every student run otherwise). Floors: `uv run python -m tests.staff.test_parallel_world_sizes`
(tests/staff/README.md, "Tensor parallelism")."""

import functools

import pytest
import torch
import torch.nn.functional as TF
from torch import nn

from cs336_basics.nn.parallel.launch import launch
from cs336_basics.testing import tolerance

from .. import _parallel as P
from .. import oracles
from .. import test_parallel_layers as layers
from .._helpers import assert_close, rand
from ..adapters import (
    run_column_parallel_linear,
    run_parallel_swiglu,
    run_row_parallel_linear,
)

pytestmark = pytest.mark.slow  # second tier: process groups of 1 and 4 ranks, DTensor

OTHER_SIZES = (1, 4)
ALL_SIZES = (1, 2, 4)
CASE_IDS = [i.replace(f"-W{P.WORLD_SIZE}", "") for i in layers.IDS]  # kind-dtype; the size is a parameter here
TOL_ADAPTERS = tolerance(4.4e-7)  # float32; measured floor vs built-ins over 3 seeds, W = 1, 2, 4
TOL_DTENSOR = {torch.float32: tolerance(2.0e-7), torch.float64: tolerance(3.2e-16, torch.float64)}

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


def _ids(world_size):
    return f"W{world_size}"


@pytest.mark.parametrize("world_size", OTHER_SIZES, ids=_ids)
@pytest.mark.parametrize("kind, dtype", layers.CASES, ids=CASE_IDS)
def test_parallel_output_and_gradients_equal_single_process_at_other_world_sizes(kind, dtype, world_size):
    P.check_output_equals_single_process(kind, dtype, world_size)
    P.check_input_grad_equals_single_process(kind, dtype, world_size)
    P.check_weight_grads_gathered_equal_single_process(kind, dtype, world_size)


@pytest.mark.parametrize("kind", list(P.MEGATRON_COLLECTIVES))
def test_parallel_collectives_per_pass_are_megatrons_with_four_ranks(kind):
    P.check_collectives_per_pass_are_megatrons(kind, 4)
    P.check_ffn_forward_issues_exactly_one_all_reduce(4)


def test_parallel_single_rank_issues_no_collective():
    for kind in P.KINDS:
        got = P.ours(kind, 1, torch.float32)
        assert got["forward"] == {} and got["backward"] == {}, kind


@pytest.mark.parametrize("world_size", OTHER_SIZES, ids=_ids)
def test_parallel_heads_split_equals_one_process_at_other_world_sizes(world_size):
    P.check_heads_split_equals_one_process(world_size)


@pytest.mark.parametrize("gather_output", [True, False], ids=["gathered", "sharded"])
def test_parallel_column_adapter_matches_builtin(gather_output):
    w, x = rand(24, 16, seed=1, std=0.3, dtype=torch.float32), rand(2, 3, 16, seed=2, dtype=torch.float32)
    y = run_column_parallel_linear(16, 24, 4, w, x, gather_output=gather_output)
    assert_close(y, TF.linear(x, w), TOL_ADAPTERS, f"column-parallel, W=4, gather_output={gather_output}")


def test_parallel_row_adapter_matches_builtin():
    w, x = rand(16, 24, seed=3, std=0.3, dtype=torch.float32), rand(5, 24, seed=4, dtype=torch.float32)
    assert_close(run_row_parallel_linear(24, 16, 4, w, x), TF.linear(x, w), TOL_ADAPTERS, "row-parallel, W=4")


@pytest.mark.parametrize("world_size", ALL_SIZES, ids=_ids)
def test_parallel_ffn_adapter_matches_builtin(world_size):
    w1, w2, w3 = (
        rand(*s, seed=seed, std=0.3, dtype=torch.float32) for s, seed in (((24, 16), 5), ((16, 24), 6), ((24, 16), 7))
    )
    x = rand(2, 3, 16, seed=8, dtype=torch.float32)
    y = run_parallel_swiglu(16, 24, world_size, w1, w2, w3, x)
    assert_close(y, oracles.swiglu_ffn(x, w1, w2, w3), TOL_ADAPTERS, f"parallel FFN, W={world_size}")


def test_parallel_ffn_adapter_raises_the_ranks_error_for_a_width_they_cannot_share():
    w1, w2, w3, x = torch.zeros(18, 16), torch.zeros(16, 18), torch.zeros(18, 16), torch.zeros(3, 16)
    with pytest.raises(ValueError, match=r"d_out=18 is not divisible by world_size=4"):
        run_parallel_swiglu(16, 18, 4, w1, w2, w3, x)


class BuiltinSwiGLU(nn.Module):
    """The oracle FFN: three torch.nn.Linear, as in Hugging Face's LlamaMLP."""

    def __init__(self, dtype):
        super().__init__()
        self.w1 = nn.Linear(P.D_MODEL, P.D_FF, bias=False, dtype=dtype)
        self.w2 = nn.Linear(P.D_FF, P.D_MODEL, bias=False, dtype=dtype)
        self.w3 = nn.Linear(P.D_MODEL, P.D_FF, bias=False, dtype=dtype)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


def rank_dtensor(rank: int, world_size: int) -> dict:
    """On one rank: every case through DTensor tensor parallelism, weights gathered to full tensors."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", (world_size,))
    styles = {
        "column_gathered": ColwiseParallel(output_layouts=Replicate()),
        "column_sharded": ColwiseParallel(),
        "row_parallel_input": RowwiseParallel(input_layouts=Shard(-1)),
        "row_full_input": RowwiseParallel(input_layouts=Replicate()),
    }
    out = {}
    for kind in P.KINDS:
        for dtype in P.DTYPES:
            d_in, d_out = P.KINDS[kind]
            full = {k: v.to(dtype) for k, v in P.inputs(kind)["weights"].items()}
            if kind == "ffn":
                module = BuiltinSwiGLU(dtype)
                plan = {"w1": ColwiseParallel(), "w3": ColwiseParallel(), "w2": RowwiseParallel()}
            else:
                module, plan = nn.Linear(d_in, d_out, bias=False, dtype=dtype), styles[kind]
            module.load_state_dict(full)
            module = parallelize_module(module, mesh, plan)
            res = P.run_case(module, kind, dtype, rank, world_size)
            res["dw"] = {k: p.grad.full_tensor() for k, p in module.named_parameters()}  # gathered
            out[kind, dtype] = res
    return out


@functools.cache
def dtensor(kind: str, world_size: int, dtype: torch.dtype) -> dict:
    return P.assemble(_dtensor_ranks(world_size), kind, dtype, False)


@functools.cache
def _dtensor_ranks(world_size: int) -> list[dict]:
    # Imported here in the parent, so that forked ranks share the seconds of imports (DTensor
    # loads torch._dynamo lazily on first use) instead of each paying them.
    import torch._dynamo  # noqa: F401
    import torch.distributed.tensor.parallel  # noqa: F401

    return launch(rank_dtensor, world_size, timeout=60)


@pytest.mark.parametrize("world_size", ALL_SIZES, ids=_ids)
@pytest.mark.parametrize("kind, dtype", layers.CASES, ids=CASE_IDS)
def test_parallel_agrees_with_dtensor_parallelize_module(kind, dtype, world_size):
    got, want = P.ours(kind, world_size, dtype), dtensor(kind, world_size, dtype)
    tol = TOL_DTENSOR[dtype]
    assert_close(got["y"], want["y"], tol, f"{kind} output vs DTensor, W={world_size}")
    assert_close(got["dx"], want["dx"], tol, f"{kind} input grad vs DTensor, W={world_size}")
    for key in want["dw"]:
        assert_close(got["dw"][key], want["dw"][key], tol, f"{kind} grad of {key} vs DTensor, W={world_size}")


def _measure() -> None:
    """Print the floor of TOL_DTENSOR (the single-process floor: `uv run python -m tests.test_parallel_layers`)."""
    from cs336_basics.testing import scaled_error

    worst = {}
    for world_size in ALL_SIZES:
        for kind, dtype in layers.CASES:
            got, want = P.ours(kind, world_size, dtype), dtensor(kind, world_size, dtype)
            pairs = [(got["y"], want["y"]), (got["dx"], want["dx"])] + [
                (got["dw"][k], want["dw"][k]) for k in want["dw"]
            ]
            worst[dtype] = max(worst.get(dtype, 0.0), max(float(scaled_error(a, b).max()) for a, b in pairs))
    for dtype, err in worst.items():
        print(f"ours vs DTensor {dtype!s:14s} {err:.2e}")


if __name__ == "__main__":
    _measure()
