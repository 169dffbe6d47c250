"""checkpoint, rung by rung: the iteration loaded back as saved; the model's weights restored into
the model given, in place; its buffers too; the optimizer's per-parameter state and its param
groups; a path, a str and a file object alike; a checkpoint of another model refused; and last,
a resumed run bit-identical to one never stopped (tests/_ladder.py). The adapters'
momentum_optimizer is the optimizer: what is checked is the checkpoint."""

import io
import os
import pathlib
import tempfile

import torch

from cs336_basics.serialization import read_checkpoint

from ._helpers import regression_step
from ._ladder import climb_failed, rung
from .adapter_checks import momentum_optimizer
from .adapters import run_load_checkpoint, run_save_checkpoint


class Net(torch.nn.Module):
    """Two layers and a buffer (a running scale, part of state_dict but not a parameter)."""

    def __init__(self, seed: int, extra_buffer: bool = False):
        super().__init__()
        torch.manual_seed(seed)
        self.fc1, self.fc2 = torch.nn.Linear(6, 16), torch.nn.Linear(16, 3)
        self.register_buffer("scale", torch.rand(16) + 0.5)
        if extra_buffer:
            self.register_buffer("extra", torch.zeros(2))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)) * self.scale)


def new(seed: int = 0, **kwargs):
    """A model and an optimizer of two param groups (fc1, fc2) with their own hyper-parameters."""
    model = Net(seed, **kwargs)
    groups = [
        {"params": model.fc1.parameters(), "lr": 1e-2, "weight_decay": 0.1},
        {"params": model.fc2.parameters(), "lr": 3e-3, "weight_decay": 0.0, "momentum": 0.8},
    ]
    return model, momentum_optimizer(groups)


def train(model, optimizer, steps: range):
    for k in steps:
        regression_step(model, optimizer, k)
        with torch.no_grad():
            model.scale.mul_(0.9).add_(0.1)  # the buffer changes as training goes


def trained(steps: int = 3):
    model, optimizer = new()
    train(model, optimizer, range(steps))
    optimizer.param_groups[0]["lr"] = 4e-3  # as a schedule would have set it
    return model, optimizer


KIND = {"str": "a str path", "path": "a pathlib.Path", "file": "a file object (io.BytesIO)"}


def save(model, optimizer, iteration: int, out, to: str = "file"):
    try:
        run_save_checkpoint(model, optimizer, iteration, out)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"save_checkpoint to {KIND[to]} raised {type(e).__name__}: {e}",
                     "save model.state_dict(), optimizer.state_dict() and the int iteration to `out` as given "
                     "(torch.save takes a path or a file object)")  # fmt: skip


def load(src, model, optimizer, to: str = "file"):
    try:
        return run_load_checkpoint(src, model, optimizer)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"load_checkpoint from {KIND[to]} of what save_checkpoint wrote raised {type(e).__name__}: {e}",
                     "read it back (read_checkpoint) from `src` as given and load each state_dict into the model "
                     "and optimizer passed in")  # fmt: skip


def round_trip(model, optimizer, iteration: int = 3, to: str = "str"):
    """Save (model, optimizer), load into a fresh pair (seed 1): (fresh model, fresh optimizer, returned)."""
    fresh, fresh_optimizer = new(seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        out = {"str": path, "path": pathlib.Path(path), "file": io.BytesIO()}[to]
        save(model, optimizer, iteration, out, to)
        if to == "file":
            out.seek(0)
        returned = load(out, fresh, fresh_optimizer, to)
    return fresh, fresh_optimizer, returned


@rung(1)
def test_checkpoint_file_holds_the_state_dicts_and_the_iteration():
    model, optimizer = trained()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        save(model, optimizer, 7, path, "str")
        try:
            held = read_checkpoint(path)
        except Exception as e:  # noqa: BLE001 -- what was written is not a checkpoint
            climb_failed(f"reading what save_checkpoint wrote failed: {type(e).__name__}: {str(e)[:300]}",
                         "write {'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'iteration': int}: "
                         "tensors, numbers and plain containers only (torch.load(weights_only=True) reads nothing else)")  # fmt: skip
    missing = sorted(set(model.state_dict()) - set(held["model"]))
    if missing:
        climb_failed(f"the checkpoint's model state lacks {missing}, which model.state_dict() holds (the buffer "
                     "'scale' is not a parameter)",
                     "save model.state_dict(): parameters and buffers, under their state_dict names")  # fmt: skip
    groups = held["optimizer"].get("param_groups", [])
    if sorted(held["optimizer"]) != ["param_groups", "state"] or len(groups) != 2:
        climb_failed(f"the checkpoint's optimizer entry holds {sorted(held['optimizer'])} with {len(groups)} param "
                     "groups, for an optimizer of 2",
                     "save optimizer.state_dict() whole: its 'state' and its 'param_groups'")  # fmt: skip


@rung(2)
def test_checkpoint_load_returns_the_iteration_saved():
    for iteration in (7, 0, 123456):
        *_, returned = round_trip(*trained(), iteration)
        if type(returned) is not int or returned != iteration:
            climb_failed(f"saved at iteration {iteration}, load_checkpoint returned {returned!r} "
                         f"({type(returned).__name__})",
                         "store the iteration as given and return it as a Python int from load_checkpoint")  # fmt: skip


@rung(3)
def test_checkpoint_restores_the_model_s_weights():
    model, optimizer = trained()
    fresh, _, _ = round_trip(model, optimizer)
    for name, p in model.named_parameters():
        got = dict(fresh.named_parameters())[name]
        if not torch.equal(got, p):
            kept = " (it kept its own initial values)" if torch.equal(got, Net(1).state_dict()[name]) else ""
            climb_failed(f"after load, the model's {name} differs from the one saved{kept}",
                         "model.load_state_dict(state['model']) on the model passed to load_checkpoint")  # fmt: skip


@rung(4)
def test_checkpoint_loads_into_the_model_s_own_parameters():
    model, optimizer = trained()
    fresh, fresh_optimizer = new(seed=1)
    before = {name: p for name, p in fresh.named_parameters()}
    buffer = io.BytesIO()
    save(model, optimizer, 3, buffer)
    buffer.seek(0)
    load(buffer, fresh, fresh_optimizer)
    replaced = [name for name, p in fresh.named_parameters() if p is not before[name]]
    if replaced:
        climb_failed(f"after load, the model's {replaced} are new tensor objects: the optimizer still updates the old ones",
                     "load_state_dict copies the saved values into the existing parameters: never assign new ones")  # fmt: skip


@rung(5)
def test_checkpoint_restores_the_buffers():
    model, optimizer = trained()
    fresh, _, _ = round_trip(model, optimizer)
    if not torch.equal(fresh.scale, model.scale):
        climb_failed("after load, the model's buffer 'scale' differs from the one saved",
                     "load the whole state_dict: buffers too")  # fmt: skip


@rung(6)
def test_checkpoint_restores_the_optimizer_s_per_parameter_state():
    model, optimizer = trained()
    fresh, fresh_optimizer, _ = round_trip(model, optimizer)
    for (name, p), q in zip(model.named_parameters(), fresh.parameters(), strict=True):
        want, got = optimizer.state[p], fresh_optimizer.state.get(q, {})
        if not got:
            climb_failed(f"after load, the optimizer holds no state for the parameter {name} (its moments and "
                         "step would start again from zero)",
                         "save optimizer.state_dict() whole and restore it with optimizer.load_state_dict, "
                         "which maps the saved state onto the optimizer's own parameters")  # fmt: skip
        for key, value in want.items():
            if key not in got or not torch.equal(torch.as_tensor(got[key]), torch.as_tensor(value)):
                climb_failed(f"after load, the optimizer's {key!r} of {name} differs from the one saved",
                             "save optimizer.state_dict() whole and restore it with optimizer.load_state_dict")  # fmt: skip


@rung(7)
def test_checkpoint_restores_the_optimizer_s_param_groups():
    model, optimizer = trained()
    _, fresh_optimizer, _ = round_trip(model, optimizer)
    for k, (want, got) in enumerate(zip(optimizer.param_groups, fresh_optimizer.param_groups, strict=True)):
        differ = [key for key in want if key != "params" and got.get(key) != want[key]]
        if differ:
            climb_failed(f"after load, param group {k}'s {differ} are {[got.get(d) for d in differ]}, saved "
                         f"{[want[d] for d in differ]}",
                         "optimizer.state_dict() holds every param group's hyper-parameters (the scheduled lr "
                         "too): save it whole and load it with optimizer.load_state_dict")  # fmt: skip


@rung(8)
def test_checkpoint_writes_to_a_path_a_str_and_a_file_object():
    model, optimizer = trained()
    for to in ("str", "path", "file"):
        fresh, _, returned = round_trip(model, optimizer, 5, to=to)
        if returned != 5 or not torch.equal(fresh.fc1.weight, model.fc1.weight):
            climb_failed(f"saved to and loaded from {KIND[to]}, the iteration or the weights did not come back",
                         "pass `out` and `src` to torch.save / torch.load as given: both take paths and file objects")  # fmt: skip


@rung(9)
def test_checkpoint_of_another_model_is_refused():
    for saver, loader, what in ((True, False, "an unexpected"), (False, True, "a missing")):
        model, optimizer = new(seed=0, extra_buffer=saver)
        train(model, optimizer, range(2))
        other, other_optimizer = new(seed=1, extra_buffer=loader)
        buffer = io.BytesIO()
        save(model, optimizer, 2, buffer)
        buffer.seek(0)
        try:
            run_load_checkpoint(buffer, other, other_optimizer)
        except Exception:  # noqa: BLE001 -- refused: load_state_dict's error, or the implementation's own
            continue
        climb_failed(f"a checkpoint with {what} buffer ('extra') loaded into the model without an error",
                     "model.load_state_dict(state['model']) with strict=True (its default): a weight missing or "
                     "unexpected must fail loudly, never pass silently")  # fmt: skip


@rung(10)
def test_checkpoint_resumed_run_equals_a_run_never_stopped():
    model, optimizer = new()
    train(model, optimizer, range(5))
    fresh, fresh_optimizer, returned = round_trip(model, optimizer, 5)
    train(fresh, fresh_optimizer, range(returned, 9))
    train(model, optimizer, range(5, 9))
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        if not torch.equal(a, b):
            climb_failed(f"5 steps, a checkpoint, 4 more steps: {name} differs from 9 steps without the stop",
                         "everything training reads must come back: weights, buffers, the optimizer's state and step, "
                         "the param groups, the iteration")  # fmt: skip
