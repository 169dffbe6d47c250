"""Checkpoints: a model's and an optimizer's state_dict and the iteration count in one file, so
that training can stop and resume exactly where it was (CS336 assignment 1, section 5.2).

The file is torch.save's format. It is read with torch.load(weights_only=True), whose unpickler
builds only tensors and plain containers (dict, list, tuple, str, numbers, None), so a file
crafted to run code when unpickled is refused instead of run. A path is written through a
temporary file in the same directory and renamed over the target (os.replace), so a crash or a
full disk never leaves a half-written checkpoint under the target's name.
"""

import dataclasses
import numbers
import os
from pathlib import Path
from typing import IO, BinaryIO

import torch

from cs336_basics.atomic_write import atomic_open

Destination = str | os.PathLike | BinaryIO | IO[bytes]
KEYS = ("model", "optimizer", "iteration")  # what a checkpoint holds


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    model: dict
    optimizer: dict
    iteration: int


class CheckpointError(ValueError):
    """A file that is not a readable checkpoint: truncated, corrupted, or something else entirely."""


def _name(src: Destination) -> str:
    return repr(os.fspath(src)) if isinstance(src, (str, os.PathLike)) else f"the file object {type(src).__name__}"


def write_checkpoint(state: dict, out: Destination) -> None:
    """torch.save(state) to a path (a temporary name in the same directory, flushed to disk, then
    renamed over `out`) or to a binary file object (at its current position)."""
    if not isinstance(out, (str, os.PathLike)):
        torch.save(state, out)
        return
    with atomic_open(out, "wb", fsync=True) as f:
        torch.save(state, f)


def read_checkpoint(src: Destination) -> dict:
    """The dict a checkpoint holds ({"model", "optimizer", "iteration"}), tensors on the CPU.
    A missing path raises FileNotFoundError; anything that is not such a checkpoint (truncated,
    corrupted, a pickle that would run code, another kind of file) raises CheckpointError."""
    if isinstance(src, (str, os.PathLike)) and not Path(src).is_file():
        raise FileNotFoundError(f"no checkpoint at {os.fspath(src)!r}")
    try:
        state = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - every way a foreign or damaged file fails to load
        reason = " ".join(str(e).split())[:300] or type(e).__name__
        raise CheckpointError(
            f"{_name(src)} is not a readable checkpoint (truncated, corrupted, or not written by "
            f"save_checkpoint): {type(e).__name__}: {reason}"
        ) from None
    missing = [k for k in KEYS if not isinstance(state, dict) or k not in state]
    if missing:
        found = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(
            f"{_name(src)} is not a checkpoint written by save_checkpoint: it lacks {missing} (found {found})"
        )
    if not isinstance(state["model"], dict) or not isinstance(state["optimizer"], dict):
        raise CheckpointError(f"{_name(src)}: 'model' and 'optimizer' must be state dicts")
    iteration = state["iteration"]
    if not isinstance(iteration, numbers.Integral) or isinstance(iteration, bool) or iteration < 0:
        raise CheckpointError(f"{_name(src)}: 'iteration' must be an integer >= 0, got {iteration!r}")
    return state


def save_checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer, iteration: int, out: Destination) -> None:
    """Write model.state_dict(), optimizer.state_dict() and `iteration` to `out` (a path or a
    binary file object) with write_checkpoint. The optimizer's state_dict holds its hyper-parameters
    and its per-parameter state (for AdamW the moments and the step count)."""
    if not isinstance(iteration, numbers.Integral) or isinstance(iteration, bool) or iteration < 0:
        raise ValueError(f"iteration must be an integer >= 0, got {iteration!r}")
    # BEGIN SOLUTION
    snapshot = Checkpoint(model=model.state_dict(), optimizer=optimizer.state_dict(), iteration=int(iteration))
    state = dict(vars(snapshot))  # plain dict: torch.load(weights_only=True) reads it back
    # END SOLUTION
    write_checkpoint(state, out)


def load_checkpoint(src: Destination, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Restore `model` and `optimizer` in place from a checkpoint save_checkpoint wrote (a path or a
    binary file object, read with read_checkpoint) and return the iteration it stored."""
    state = read_checkpoint(src)
    # BEGIN SOLUTION
    ckpt = Checkpoint(**{f.name: state[f.name] for f in dataclasses.fields(Checkpoint)})
    model.load_state_dict(ckpt.model)
    optimizer.load_state_dict(ckpt.optimizer)
    return ckpt.iteration
    # END SOLUTION
