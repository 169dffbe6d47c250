"""The launcher behind the tensor-parallel tests and adapters: results come back in rank order,
a failing rank's exception reaches the caller, a hung group is killed at its timeout, and no
process outlives a launch; inside recording_ranks every rank's calls come back. run_sharded on a rank of a running group gives what a launch gives,
which lets the public fixture tests share one launch and still fail one case at a time."""

import functools
import os
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist
import tqdm

from cs336_basics import REPO, call_rule
from cs336_basics.builtin_guard import CallRecorder, forbidden_calls
from cs336_basics.nn.parallel import comm
from cs336_basics.nn.parallel.launch import START_METHOD_ENV, default_start_method, launch, recording_ranks

from .. import _parallel as P
from ..adapters import run_column_parallel_linear

pytestmark = pytest.mark.slow  # second tier: process groups launched and killed

no_process_left_behind = P.no_process_left_behind  # autouse: every test here


def _rank_sum(rank, world_size):
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    return rank, world_size, float(t)


def _rank_1_fails_while_rank_0_waits(rank, world_size):
    if rank == 1:
        raise KeyError("rank 1 broke")
    dist.all_reduce(torch.zeros(1))  # never completes: rank 1 is gone
    return rank


def _rank_calls_f_linear(rank, world_size):
    return torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3)).sum().item()


def _rank_hangs(rank, world_size):
    time.sleep(3600)


@pytest.mark.parametrize("dispatch", [False, True])
def test_parallel_launch_recording_ranks_brings_back_every_rank_s_calls(dispatch):
    with recording_ranks(functools.partial(CallRecorder, dispatch)) as ranks:
        assert launch(_rank_calls_f_linear, 2) == [24.0, 24.0]
    assert ranks.started == ranks.recorded == 2
    # the built-ins each rank called; the call rule also records launch.py (in the package) calling
    # this test's function, a module outside it: not what this test is about. The dispatcher's
    # observer sees aten.linear either way; dispatch=True adds the Python dispatch mode's count
    builtins = [c for c in forbidden_calls("parallel", ranks.calls) if call_rule.callee_of(c) is None]
    assert builtins == ["F.linear", "aten.linear"]
    assert (ranks.operators > 0) == dispatch


def test_parallel_launch_ranks_record_afresh_under_the_launching_thread_s_recorder():
    """A forked rank inherits the caller's active recorder, which records into a copy that never
    comes back: each rank leaves it and records for itself, and the caller's is left intact."""
    with CallRecorder() as outer, recording_ranks(CallRecorder) as ranks:
        launch(_rank_calls_f_linear, 2, start_method="fork")
    assert ranks.recorded == 2 and "aten.linear" in ranks.calls
    assert "aten.linear" not in outer.calls  # the caller's process computed nothing


def _rank_has_no_profile_hook(rank, world_size):
    return sys.getprofile() is None


def test_parallel_launch_ranks_leave_the_launching_thread_s_profile_hook():
    """Outside recording_ranks too: a forked rank does not run under the caller's recorder."""
    with CallRecorder(dispatch=False):
        assert launch(_rank_has_no_profile_hook, 2, start_method="fork") == [True, True]


def test_parallel_launch_returns_each_rank_result_in_rank_order():
    assert launch(_rank_sum, 4) == [(r, 4, 10.0) for r in range(4)]


def _rank_without_collectives(rank, world_size):
    return rank


def test_parallel_launch_of_ranks_without_collectives_never_breaks_the_group_setup():
    # Without the barrier after init, 6 of 40 such launches failed in gloo's connectFullMesh.
    for _ in range(20):
        assert launch(_rank_without_collectives, 2) == [0, 1]


def test_parallel_launch_raises_the_failing_rank_exception_and_kills_its_partners():
    start = time.monotonic()
    with pytest.raises(KeyError, match="rank 1 broke") as info:
        launch(_rank_1_fails_while_rank_0_waits, 2, timeout=60)
    assert time.monotonic() - start < 30  # not the 60 s timeout: the partner was killed
    assert "rank 1 of 2" in str(info.value.__cause__)


def test_parallel_launch_kills_a_hung_group_at_its_timeout():
    with pytest.raises(TimeoutError, match=r"ranks \[0, 1\] .* 2 s"):
        launch(_rank_hangs, 2, timeout=2)


def test_parallel_backend_is_gloo_without_cuda_and_overridable(monkeypatch):
    monkeypatch.delenv(comm.BACKEND_ENV, raising=False)
    assert comm.choose_backend() == ("nccl" if torch.cuda.is_available() else "gloo")
    monkeypatch.setenv(comm.BACKEND_ENV, "nccl")
    assert comm.choose_backend() == "nccl"
    assert comm.choose_backend("gloo") == "gloo"  # an argument beats the environment
    monkeypatch.setenv(comm.BACKEND_ENV, "mpi?")
    with pytest.raises(ValueError, match=r"CS336_DIST_BACKEND must be one of \['gloo', 'nccl'\], got 'mpi\?'"):
        comm.choose_backend()


def _rank_column_in_group(rank, world_size, w, x, gather_output):
    return run_column_parallel_linear(16, 24, world_size, w, x, gather_output=gather_output)


@pytest.mark.parametrize("gather_output", [True, False], ids=["gathered", "sharded"])
def test_parallel_run_sharded_on_a_rank_gives_every_rank_what_a_launch_gives(gather_output):
    # tests/test_parallel_adapters.py runs every fixture case in one launch this way
    g = torch.Generator().manual_seed(0)
    w, x = torch.randn(24, 16, generator=g), torch.randn(2, 3, 16, generator=g)
    launched = run_column_parallel_linear(16, 24, 2, w, x, gather_output=gather_output)
    in_group = launch(_rank_column_in_group, 2, (w, x, gather_output))
    assert launched.shape == (2, 3, 24)
    assert all(torch.equal(y, launched) for y in in_group)


def _rank_asks_for_another_world_size(rank, world_size, w, x):
    return run_column_parallel_linear(16, 24, 4, w, x)


def test_parallel_run_sharded_on_a_rank_of_another_group_size_raises_naming_both():
    with pytest.raises(ValueError, match=r"run_sharded on a rank of a group of 2 needs world_size=2, got 4"):
        launch(_rank_asks_for_another_world_size, 2, (torch.zeros(24, 16), torch.zeros(3, 16)))


BROKEN = """
def pytest_sessionstart(session):
    import cs336_basics.nn.parallel as parallel

    def forward(self, *args, **kwargs):
        raise NotImplementedError("{cls} forward not written yet")

    parallel.{cls}.forward = forward
"""


def _run_with_broken(tmp_path, cls: str, *test_files: str) -> tuple[list[str], str]:
    """The public tests in test_files with `cls.forward` raising in every process: (failed test ids, output)."""
    (tmp_path / "broken.py").write_text(BROKEN.format(cls=cls))
    # the patch is made in the pytest process: the ranks see it only if they are forked from it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]), **{START_METHOD_ENV: "fork"})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "broken", "-rf", *test_files],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    failed = sorted(line.split()[1].split("::")[1] for line in done.stdout.splitlines() if line.startswith("FAILED"))
    return failed, done.stdout


def test_parallel_fixture_tests_report_each_case_on_its_own_when_one_case_raises(tmp_path):
    # tests/test_parallel_adapters.py runs every case in one launch; a case that raises must fail
    # only its own test (and the FFN's, which uses a row-parallel layer), with its own error
    from cs336_basics.staff.cases import cases_of

    public = cases_of("parallel", False)
    # every parallel adapter calls a row-parallel layer but the column-parallel linear's own and the
    # split attention's (it computes with its projections' weights through the attention kernel)
    failed, out = _run_with_broken(tmp_path, "RowParallelLinear", "tests/test_parallel_adapters.py")
    no_row = (
        "run_column_parallel_linear",
        "run_column_parallel_linear_backward",
        "run_parallel_attention",
        "run_parallel_attention_backward",
    )
    uses_row = [c for c in public if c.adapter not in no_row]
    expected = sorted(f"test_parallel_matches_fixture[{c.name}]" for c in uses_row)
    assert sorted(failed) == expected, out[-3000:]
    assert out.count("RowParallelLinear forward not written yet") >= len(expected)
    assert f"{len(public) - len(expected)} passed" in out.splitlines()[-1]


def test_parallel_unfinished_heads_class_fails_only_the_heads_test(tmp_path):
    # the layer checks and the attention split by head share one launch
    failed, out = _run_with_broken(
        tmp_path, "ParallelAttention", "tests/test_parallel_layers.py", "tests/test_parallel_heads.py"
    )
    assert failed == ["test_parallel_heads_split_equals_one_process"], out[-3000:]
    assert "ParallelAttention forward not written yet" in out


@pytest.mark.skipif(sys.platform != "linux" or bool(os.environ.get(START_METHOD_ENV)), reason="fork: Linux's default")
def test_parallel_launch_ranks_stay_forked_after_a_progress_bar_in_the_same_process():
    # tqdm's monitor thread would make the process threaded, and later ranks forkserver-started,
    # out of reach of the patches of the tests that run after (tests/conftest.py turns it off)
    for _ in tqdm.tqdm(range(2), disable=False):
        pass
    assert default_start_method() == "fork"
