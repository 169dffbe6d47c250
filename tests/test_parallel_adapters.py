"""The tensor-parallel adapters: full weights in, whole output out, equal to PyTorch's built-in
single-process computation. Each call starts its own group of `world_size` ranks."""

import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.testing import tolerance

from . import _parallel as P
from . import adapters, oracles
from ._helpers import assert_close, rand
from .adapters import (
    run_column_parallel_linear,
    run_parallel_swiglu,
    run_row_parallel_linear,
)

TOL = tolerance(4.4e-7)  # float32; measured floor vs built-ins over 3 seeds, W = 1, 2, 4 (tests/README.md)


no_process_left_behind = P.no_process_left_behind  # autouse: every test here


@pytest.mark.parametrize("case", fixture_names("parallel"))
def test_parallel_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


def _f32(*shape, seed, std=1.0):
    return rand(*shape, seed=seed, std=std, dtype=torch.float32)


@pytest.mark.parametrize("gather_output", [True, False], ids=["gathered", "sharded"])
def test_parallel_column_adapter_matches_builtin(gather_output):
    w, x = _f32(24, 16, seed=1, std=0.3), _f32(2, 3, 16, seed=2)
    y = run_column_parallel_linear(16, 24, 2, w, x, gather_output=gather_output)
    assert_close(y, TF.linear(x, w), TOL, f"column-parallel, W=2, gather_output={gather_output}")


def test_parallel_row_adapter_matches_builtin():
    w, x = _f32(16, 24, seed=3, std=0.3), _f32(5, 24, seed=4)
    assert_close(run_row_parallel_linear(24, 16, 4, w, x), TF.linear(x, w), TOL, "row-parallel, W=4")


@pytest.mark.parametrize("world_size", [1, 2, 4], ids=lambda w: f"W{w}")
def test_parallel_ffn_adapter_matches_builtin(world_size):
    w1, w2, w3 = _f32(24, 16, seed=5, std=0.3), _f32(16, 24, seed=6, std=0.3), _f32(24, 16, seed=7, std=0.3)
    x = _f32(2, 3, 16, seed=8)
    y = run_parallel_swiglu(16, 24, world_size, w1, w2, w3, x)
    assert_close(y, oracles.swiglu_ffn(x, w1, w2, w3), TOL, f"parallel FFN, W={world_size}")


def test_parallel_ffn_adapter_rejects_a_width_the_ranks_cannot_share():
    w1, w2, w3, x = torch.zeros(18, 16), torch.zeros(16, 18), torch.zeros(18, 16), torch.zeros(3, 16)
    with pytest.raises(ValueError, match=r"d_out=18 is not divisible by world_size=4"):
        run_parallel_swiglu(16, 18, 4, w1, w2, w3, x)
