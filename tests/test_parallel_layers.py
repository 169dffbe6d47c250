"""Tensor-parallel layers in a real process group (gloo on 127.0.0.1) of two ranks: they compute
what the single-process modules compute, output and every gradient, and issue Megatron-LM's
collectives, no more.

One launch runs every case on both ranks (tests/_parallel.py); each test checks one behaviour of
those results. Tolerances: tests/floors.py ("parallel.*"), the floors measured by measure_floors below. The course staff's suite repeats these checks with 1 and 4 ranks
and against PyTorch's DTensor tensor parallelism."""

import pytest
import torch

from cs336_basics.nn import TransformerLMConfig, convert
from cs336_basics.nn.parallel import (
    ColumnParallelLinear,
    ParallelSwiGLUFFN,
    ParallelTransformerLM,
    RowParallelLinear,
    sharding,
)

from . import _parallel as P
from .floors import MaxErrors

TOL_SINGLE = P.TOL_SINGLE  # tests/floors.py

W = P.WORLD_SIZE
CASES = [(k, d) for k in P.KINDS for d in P.DTYPES]
IDS = [f"{k}-W{W}-{str(d).removeprefix('torch.')}" for k, d in CASES]

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


@pytest.mark.parametrize("kind, dtype", CASES, ids=IDS)
def test_parallel_output_equals_single_process(kind, dtype):
    P.check_output_equals_single_process(kind, dtype, W)


@pytest.mark.parametrize("kind, dtype", CASES, ids=IDS)
def test_parallel_input_grad_equals_single_process(kind, dtype):
    P.check_input_grad_equals_single_process(kind, dtype, W)


@pytest.mark.parametrize("kind, dtype", CASES, ids=IDS)
def test_parallel_weight_grads_gathered_equal_single_process(kind, dtype):
    P.check_weight_grads_gathered_equal_single_process(kind, dtype, W)


COLLECTIVES = P.MEGATRON_COLLECTIVES  # (forward, backward) collectives per pass, per kind


def test_parallel_ffn_forward_issues_exactly_one_all_reduce():
    P.check_ffn_forward_issues_exactly_one_all_reduce(W)


@pytest.mark.parametrize("kind", list(COLLECTIVES))
def test_parallel_collectives_per_pass_are_megatrons(kind):
    P.check_collectives_per_pass_are_megatrons(kind, W)


def test_parallel_column_rank_holds_its_slice_of_output_rows():
    w = torch.arange(24 * 16, dtype=torch.float64).reshape(24, 16)  # row i holds 16 i .. 16 i + 15
    layer = ColumnParallelLinear(16, 24, world_size=4, rank=2, dtype=torch.float64)
    shard = sharding.shard_state_dict({"weight": w}, sharding.sharding_plan(layer), rank=2, world_size=4)
    convert.load_state_dict(layer, shard)
    assert torch.equal(layer.weight, w[12:18])


def test_parallel_row_rank_holds_its_slice_of_input_columns():
    w = torch.arange(16 * 24, dtype=torch.float64).reshape(16, 24)
    layer = RowParallelLinear(24, 16, world_size=4, rank=1, dtype=torch.float64)
    shard = sharding.shard_state_dict({"weight": w}, sharding.sharding_plan(layer), rank=1, world_size=4)
    convert.load_state_dict(layer, shard)
    assert torch.equal(layer.weight, w[:, 6:12])


def test_parallel_ffn_plan_follows_meta_llama():
    plan = sharding.sharding_plan(ParallelSwiGLUFFN(16, 24, world_size=2, rank=0))
    assert plan == {"w1.weight": 0, "w2.weight": 1, "w3.weight": 0}


def test_parallel_shard_then_gather_round_trips():
    full = P.inputs("ffn")["weights"]
    plan = P.plan_of("ffn")
    for world_size in (1, 2, 4):
        shards = [sharding.shard_state_dict(full, plan, r, world_size) for r in range(world_size)]
        assert shards[0]["w1.weight"].shape == (24 // world_size, 16)
        assert shards[0]["w2.weight"].shape == (16, 24 // world_size)
        back = sharding.gather_state_dict(shards, plan)
        assert all(torch.equal(back[k], full[k]) for k in full)


def test_parallel_indivisible_width_raises_naming_both_numbers():
    with pytest.raises(ValueError, match=r"d_out=10 .*world_size=4"):
        ColumnParallelLinear(16, 10, world_size=4, rank=0)
    with pytest.raises(ValueError, match=r"d_in=10 .*world_size=4"):
        RowParallelLinear(10, 16, world_size=4, rank=0)
    with pytest.raises(ValueError, match=r"d_out=18 .*world_size=4"):
        ParallelSwiGLUFFN(16, 18, world_size=4, rank=0)
    with pytest.raises(ValueError, match=r"size 10, .*world_size=4"):
        sharding.shard_state_dict({"weight": torch.zeros(10, 16)}, {"weight": 0}, rank=0, world_size=4)


@pytest.mark.parametrize(
    ("setting", "value"), [("norm", "post"), ("norm", "none"), ("ffn", "silu")], ids=["post", "no_norm", "ungated"]
)
def test_parallel_model_refuses_the_norm_and_ffn_ablations(setting, value):
    config = TransformerLMConfig(97, 16, 32, 1, 4, 64, **{setting: value})
    with pytest.raises(ValueError, match=f"pre-norm with SwiGLU; got .*{setting}='{value}'"):
        ParallelTransformerLM(config, world_size=1, rank=0)


def test_parallel_model_refuses_another_norm_type():
    config = TransformerLMConfig(97, 16, 32, 1, 4, 64, norm_type="layernorm")
    with pytest.raises(ValueError, match="norms are RMSNorms; got norm_type='layernorm'"):
        ParallelTransformerLM(config, world_size=1, rank=0)


def measure_floors(seeds=None, world_sizes=(1, 2, 4)) -> dict[str, float]:
    """{floor name: max scaled error} over world sizes, kinds, output and every gradient, per
    dtype, and of the attention split by head (tests/test_parallel_heads.py); the inputs are
    fixed (tests/_parallel.py), so `seeds` is not used."""
    floors = MaxErrors()
    for world_size in world_sizes:
        for kind, dtype in CASES:
            got, want = P.ours(kind, world_size, dtype), P.single_process(kind, dtype)
            name = "parallel.f32" if dtype == torch.float32 else "parallel.f64"
            for a, b in P.result_pairs(got, want).values():
                floors.keep(name, a, b)
        full, _, x, dy = P.heads_case()
        xg = x.clone().requires_grad_()
        want = full(xg)
        (want * dy).sum().backward()
        y, dx, _ = P.shared_launch(P.PARTS, "heads", world_size)[0]
        floors.keep("parallel.heads", y, want.detach())
        floors.keep("parallel.heads", dx, xg.grad)
    return floors
