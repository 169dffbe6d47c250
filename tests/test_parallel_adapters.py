"""The tensor-parallel adapters: full weights in, whole output out, equal to the stored fixtures
(two ranks). The course staff's suite also compares them with PyTorch's built-ins: the FFN with
1, 2 and 4 ranks, the column- and row-parallel layers with 4."""

import functools

import pytest

from cs336_basics.fixture_io import fixture_names, load_fixture
from cs336_basics.nn.parallel.launch import launch

from . import _parallel as P
from . import adapters

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


def _rank_runs_every_case(rank: int, world_size: int, fixtures: list) -> dict:
    """On one rank: every case's adapter (run_sharded computes this rank's part in this group)."""
    return {fx.name: getattr(adapters, fx.adapter)(**fx.kwargs) for fx in fixtures}


@functools.cache
def _outputs_of_one_launch() -> dict:
    """Every two-rank case's output from one launch (each launch forks every rank: ~0.1 s of CPU),
    or {} if that launch failed: each test then calls its adapter in a launch of its own and
    reports its own error."""
    fixtures = [load_fixture(name) for name in fixture_names("parallel")]
    fixtures = [fx for fx in fixtures if fx.kwargs["world_size"] == P.WORLD_SIZE]
    try:
        return launch(_rank_runs_every_case, P.WORLD_SIZE, (fixtures,), timeout=30)[0]
    except Exception:  # noqa: BLE001 -- reported per case below, by the adapter's own launch
        return {}


@pytest.mark.parametrize("case", fixture_names("parallel"))
def test_parallel_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    outputs = _outputs_of_one_launch()
    actual = outputs[case] if case in outputs else getattr(adapters, fx.adapter)(**fx.kwargs)
    snapshot.check(actual, fx)
