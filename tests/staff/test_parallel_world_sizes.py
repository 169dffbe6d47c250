"""The public tensor-parallel checks (tests/test_parallel_*.py, two ranks) repeated with groups
of 1 and 4 ranks, and our parallel layers against PyTorch's DTensor tensor parallelism
(`parallelize_module` with ColwiseParallel / RowwiseParallel on torch.nn.Linear) at 1, 2 and 4.

Staff-side because each group size is another launch, and DTensor imports torch._dynamo (seconds
of every student run otherwise). Tolerances: tests/floors.py ("parallel.adapters",
"parallel.dtensor*"), the floors measured by measure_floors below (tests/staff/README.md, "Tensor
parallelism")."""

import functools

import pytest
import torch
import torch.nn.functional as TF
from torch import nn

from cs336_basics.nn.parallel.launch import launch

from .. import _parallel as P
from .. import oracles
from .. import test_parallel_layers as layers
from .._helpers import assert_close, rand
from ..adapters import (
    run_column_parallel_linear,
    run_parallel_swiglu,
    run_row_parallel_linear,
)
from ..floors import MaxErrors, tol

pytestmark = pytest.mark.slow  # second tier: process groups of 1 and 4 ranks, DTensor

OTHER_SIZES = (1, 4)
ALL_SIZES = (1, 2, 4)
CASE_IDS = [i.replace(f"-W{P.WORLD_SIZE}", "") for i in layers.IDS]  # kind-dtype; the size is a parameter here
TOL_ADAPTERS = tol("parallel.adapters")  # float32
TOL_DTENSOR = {torch.float32: tol("parallel.dtensor"), torch.float64: tol("parallel.dtensor_f64")}
F32 = torch.float32

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


# The adapters against the built-ins: (the adapter's output, the built-in's) at world_size on the
# inputs of `seed`, 0 the tests' (each draw takes seeds 8 * seed + 1 ... 8 * seed + 8).
def column_adapter(world_size: int, seed: int = 0, gather_output: bool = True) -> tuple:
    w, x = rand(24, 16, seed=8 * seed + 1, std=0.3, dtype=F32), rand(2, 3, 16, seed=8 * seed + 2, dtype=F32)
    return run_column_parallel_linear(16, 24, world_size, w, x, gather_output=gather_output), TF.linear(x, w)


def row_adapter(world_size: int, seed: int = 0) -> tuple:
    w, x = rand(16, 24, seed=8 * seed + 3, std=0.3, dtype=F32), rand(5, 24, seed=8 * seed + 4, dtype=F32)
    return run_row_parallel_linear(24, 16, world_size, w, x), TF.linear(x, w)


def ffn_adapter(world_size: int, seed: int = 0) -> tuple:
    shapes = {5: (24, 16), 6: (16, 24), 7: (24, 16)}
    w1, w2, w3 = (rand(*s, seed=8 * seed + k, std=0.3, dtype=F32) for k, s in shapes.items())
    x = rand(2, 3, 16, seed=8 * seed + 8, dtype=F32)
    return run_parallel_swiglu(16, 24, world_size, w1, w2, w3, x), oracles.swiglu_ffn(x, w1, w2, w3)


ADAPTERS = (functools.partial(column_adapter, gather_output=True), functools.partial(column_adapter, gather_output=False),
            row_adapter, ffn_adapter)  # fmt: skip


@pytest.mark.parametrize("gather_output", [True, False], ids=["gathered", "sharded"])
def test_parallel_column_adapter_matches_builtin(gather_output):
    y, expected = column_adapter(4, gather_output=gather_output)
    assert_close(y, expected, TOL_ADAPTERS, f"column-parallel, W=4, gather_output={gather_output}")


def test_parallel_row_adapter_matches_builtin():
    assert_close(*row_adapter(4), TOL_ADAPTERS, "row-parallel, W=4")


@pytest.mark.parametrize("world_size", ALL_SIZES, ids=_ids)
def test_parallel_ffn_adapter_matches_builtin(world_size):
    assert_close(*ffn_adapter(world_size), TOL_ADAPTERS, f"parallel FFN, W={world_size}")


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


def dtensor_pairs(kind: str, dtype: torch.dtype, world_size: int) -> dict[str, tuple]:
    """{what: (ours, DTensor's)}: output, input grad and each weight's grad, W = world_size."""
    return P.result_pairs(P.ours(kind, world_size, dtype), dtensor(kind, world_size, dtype))


@pytest.mark.parametrize("world_size", ALL_SIZES, ids=_ids)
@pytest.mark.parametrize("kind, dtype", layers.CASES, ids=CASE_IDS)
def test_parallel_agrees_with_dtensor_parallelize_module(kind, dtype, world_size):
    for what, (got, want) in dtensor_pairs(kind, dtype, world_size).items():
        assert_close(got, want, TOL_DTENSOR[dtype], f"{kind} {what} vs DTensor, W={world_size}")


def measure_floors(seeds: range | None = None) -> dict[str, float]:
    """{floor name: max scaled error}: the adapters vs the built-ins over `seeds` (by default 0-2)
    and ours vs DTensor (fixed inputs, tests/_parallel.py), each kind, dtype, output and every
    gradient; by default at W = 1, 2, 4, with `seeds` given (the one-seed check) at the public
    tests' W = 2 alone, the smallest group that splits anything."""
    sizes = ALL_SIZES if seeds is None else (P.WORLD_SIZE,)
    floors = MaxErrors()
    for world_size in sizes:
        for seed in seeds or range(3):
            for adapter in ADAPTERS:
                floors.keep("parallel.adapters", *adapter(world_size, seed))
        for kind, dtype in layers.CASES:
            name = "parallel.dtensor" if dtype == F32 else "parallel.dtensor_f64"
            for got, want in dtensor_pairs(kind, dtype, world_size).values():
                floors.keep(name, got, want)
    return floors
