"""The tensor-parallel adapters: full weights in, whole output out, equal to the stored fixtures
(two ranks) and to PyTorch's built-in single-process computation (four ranks). Each call starts
its own group of `world_size` ranks; the course staff's suite calls them with 1, 2 and 4."""

import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.testing import tolerance

from . import _parallel as P
from . import adapters, oracles
from ._helpers import assert_close, rand
from .adapters import run_parallel_swiglu

TOL = tolerance(4.4e-7)  # float32; measured floor vs built-ins over 3 seeds, W = 1, 2, 4

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


@pytest.mark.parametrize("case", fixture_names("parallel"))
def test_parallel_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


def test_parallel_ffn_adapter_matches_builtin(world_size=4):
    w1, w2, w3 = (rand(*s, seed=seed, std=0.3, dtype=torch.float32) for s, seed in (((24, 16), 5), ((16, 24), 6), ((24, 16), 7)))
    x = rand(2, 3, 16, seed=8, dtype=torch.float32)
    y = run_parallel_swiglu(16, 24, world_size, w1, w2, w3, x)
    assert_close(y, oracles.swiglu_ffn(x, w1, w2, w3), TOL, f"parallel FFN, W={world_size}")


def test_parallel_ffn_adapter_rejects_a_width_the_ranks_cannot_share():
    w1, w2, w3, x = torch.zeros(17, 16), torch.zeros(16, 17), torch.zeros(17, 16), torch.zeros(3, 16)
    with pytest.raises(ValueError, match=r"d_out=17 is not divisible by world_size=2"):
        run_parallel_swiglu(16, 17, 2, w1, w2, w3, x)
