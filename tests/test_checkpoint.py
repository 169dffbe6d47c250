"""Checkpoints: save the model, the optimizer and the iteration; loading restores training
exactly; a damaged, foreign or hostile file is refused with one clear error; a path is written
through a temporary file and a rename.

The optimizer is tests/adapter_checks.py's momentum_optimizer (momentum and a step count per parameter, and
its param groups): what is tested here is the checkpoint, not the optimizer.
"""

import io
import os
import pickle

import numpy as np
import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.serialization import CheckpointError, read_checkpoint

from ._helpers import regression_step
from .adapter_checks import momentum_optimizer
from .adapters import run_checkpoint_resume, run_load_checkpoint, run_save_checkpoint


@pytest.mark.parametrize("case", fixture_names("checkpoint"))
def test_checkpoint_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_checkpoint_resume(**fx.kwargs), fx)


class Net(torch.nn.Module):
    def __init__(self, seed: int):
        super().__init__()
        torch.manual_seed(seed)
        self.fc1, self.fc2 = torch.nn.Linear(6, 16), torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def new(seed: int = 0):
    model = Net(seed)
    return model, momentum_optimizer(model.parameters(), lr=1e-2, weight_decay=0.1)


def train(model, optimizer, steps: range):
    for k in steps:
        regression_step(model, optimizer, k)


def saved(tmp_path, steps: int = 3):
    model, optimizer = new()
    train(model, optimizer, range(steps))
    path = tmp_path / "checkpoint.pt"
    run_save_checkpoint(model, optimizer, steps, path)
    return path


@pytest.mark.parametrize("to", ["path", "str", "file_object"])
def test_checkpoint_resumed_run_is_bit_identical(tmp_path, to):
    # 5 steps, save, load into a fresh model and optimizer, 4 more == 9 steps without the stop
    model, optimizer = new()
    train(model, optimizer, range(5))
    out = {"path": tmp_path / "c.pt", "str": str(tmp_path / "c.pt"), "file_object": io.BytesIO()}[to]
    run_save_checkpoint(model, optimizer, 5, out)
    if to == "file_object":
        out.seek(0)
    fresh, fresh_optimizer = new(seed=1)
    assert run_load_checkpoint(out, fresh, fresh_optimizer) == 5
    train(fresh, fresh_optimizer, range(5, 9))
    train(model, optimizer, range(5, 9))
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=False):
        assert torch.equal(a, b), name


def test_checkpoint_restores_the_optimizer_state_and_the_iteration(tmp_path):
    model, optimizer = new()
    train(model, optimizer, range(4))
    run_save_checkpoint(model, optimizer, 4, tmp_path / "c.pt")
    fresh, fresh_optimizer = new(seed=1)
    assert run_load_checkpoint(tmp_path / "c.pt", fresh, fresh_optimizer) == 4
    ours, theirs = optimizer.state_dict(), fresh_optimizer.state_dict()
    assert ours["param_groups"] == theirs["param_groups"]
    for k, state in ours["state"].items():
        assert state.keys() == theirs["state"][k].keys()
        assert all(
            torch.equal(torch.as_tensor(v), torch.as_tensor(theirs["state"][k][key])) for key, v in state.items()
        )


def test_checkpoint_loads_into_the_given_model_in_place(tmp_path):
    path = saved(tmp_path)
    fresh, fresh_optimizer = new(seed=1)
    weight = fresh.fc1.weight
    run_load_checkpoint(path, fresh, fresh_optimizer)
    assert fresh.fc1.weight is weight and torch.equal(weight, read_checkpoint(path)["model"]["fc1.weight"])


def test_checkpoint_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    path = saved(tmp_path)
    model, optimizer = new(seed=2)
    run_save_checkpoint(model, optimizer, 7, path)  # over an existing checkpoint
    assert os.listdir(tmp_path) == ["checkpoint.pt"] and read_checkpoint(path)["iteration"] == 7


def test_checkpoint_iteration_may_be_a_numpy_integer(tmp_path):
    """A NumPy integer is an integer (numbers.Integral): it is stored as a plain int, so the file
    still loads with weights_only=True (which refuses NumPy scalars) and the iteration comes back 7."""
    model, optimizer = new(seed=2)
    path = tmp_path / "checkpoint.pt"
    run_save_checkpoint(model, optimizer, np.int64(7), path)
    fresh, fresh_optimizer = new(seed=1)
    assert run_load_checkpoint(path, fresh, fresh_optimizer) == 7


class _FailsToPickle:
    def __reduce__(self):
        raise RuntimeError("disk full")


def test_checkpoint_failed_write_keeps_the_old_file(tmp_path):
    path = saved(tmp_path)
    before = path.read_bytes()
    model, optimizer = new()
    optimizer.param_groups[0]["note"] = _FailsToPickle()  # torch.save fails half way through the file
    with pytest.raises(RuntimeError, match="disk full"):
        run_save_checkpoint(model, optimizer, 1, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["checkpoint.pt"]


def test_checkpoint_truncated_file_raises_one_clear_error(tmp_path):
    path = saved(tmp_path)
    path.write_bytes(path.read_bytes()[:-200])
    fresh, fresh_optimizer = new(seed=1)
    with pytest.raises(CheckpointError, match=r"checkpoint.pt' is not a readable checkpoint \(truncated, corrupted"):
        run_load_checkpoint(path, fresh, fresh_optimizer)


@pytest.mark.parametrize(
    "content", [b"", b"not a checkpoint\n", pickle.dumps([1, 2, 3], protocol=2)], ids=["empty", "text", "list"]
)
def test_checkpoint_foreign_file_raises_one_clear_error(tmp_path, content):
    (tmp_path / "other.bin").write_bytes(content)
    with pytest.raises(CheckpointError, match=r"other.bin' is not a (readable )?checkpoint"):
        run_load_checkpoint(tmp_path / "other.bin", *new())


def test_checkpoint_of_another_kind_names_what_it_lacks(tmp_path):
    torch.save({"model": {}, "step": 3}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match=r"lacks \['optimizer', 'iteration'\] \(found \['model', 'step'\]\)"):
        run_load_checkpoint(tmp_path / "other.pt", *new())


class _Hostile:
    """Unpickling this calls os.mkdir(target): code run by merely loading a file."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return os.mkdir, (self.target,)


def test_checkpoint_hostile_file_is_refused_without_running_its_code(tmp_path):
    target = str(tmp_path / "pwned")
    model, optimizer = new()
    hostile = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": _Hostile(target)}
    torch.save(hostile, tmp_path / "hostile.pt")
    torch.load(tmp_path / "hostile.pt", weights_only=False)  # the full unpickler runs it
    assert os.path.isdir(target)
    os.rmdir(target)
    with pytest.raises(CheckpointError, match="is not a readable checkpoint"):
        run_load_checkpoint(tmp_path / "hostile.pt", *new())
    assert not os.path.exists(target)


def test_checkpoint_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        run_load_checkpoint(tmp_path / "nothing.pt", *new())
