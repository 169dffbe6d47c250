"""get_batch and the checkpoint. Their graded cases are scenarios (tests/adapters.py:
run_get_batch_checks, run_checkpoint_resume) whose output records behaviour, so behaviours are
named by the output's fingerprint like any wrong value: which checks of the batches fail, or
the iteration and parameters a resumed training ends with."""

import copy

import numpy as np
import torch

import cs336_basics.data as data
import cs336_basics.serialization as serialization

from . import mistake, variant

OPTIMIZER_STATE_LOST = (
    "a resumed training whose steps after the load are those of an optimizer starting again from zero "
    "(AdamW's moments and step count did not come back: saved, or loaded?)"
)


def _windows(dataset, starts, context_length, device):
    positions = np.asarray(starts)[:, None] + np.arange(context_length + 1)
    return torch.from_numpy(np.asarray(dataset[positions], dtype=np.int64)).to(device)


@mistake(
    "get_batch-never_last_window",
    data,
    "get_batch",
    diagnosis="get_batch drawing starts from 0 .. len(dataset) - context_length - 2 (the last window is never "
    "drawn: randint's upper bound is exclusive)",
)
def get_batch_never_last_window(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length - 1, (batch_size,), generator=generator)  # one start short
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


@mistake(
    "get_batch-never_first_window",
    data,
    "get_batch",
    diagnosis="get_batch drawing starts from 1, never 0",
    shows="batches in which the first window (start 0) is never drawn",
)
def get_batch_never_first_window(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(1, len(dataset) - context_length, (batch_size,), generator=generator)  # counts from 1
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


@mistake(
    "get_batch-targets_not_shifted",
    data,
    "get_batch",
    diagnosis="get_batch returning the inputs as the targets (not moved on by one token)",
    shows="targets that are not the inputs' windows moved on by one token (y[:, i] != x[:, i + 1])",
)
def get_batch_targets_not_shifted(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, :-1].clone()  # y = x


@mistake(
    "get_batch-one_window_per_batch",
    data,
    "get_batch",
    diagnosis="get_batch drawing one start per batch and repeating its window in every row",
)
def get_batch_one_window_per_batch(dataset, batch_size, context_length, device, generator=None):
    start = torch.randint(0, len(dataset) - context_length, (1,), generator=generator)
    w = _windows(dataset, start.numpy().repeat(batch_size), context_length, device)  # the same window in every row
    return w[:, :-1], w[:, 1:]


@mistake(
    "get_batch-keeps_token_dtype",
    data,
    "get_batch",
    diagnosis="get_batch returning the token file's dtype (uint16 or int32) instead of torch.long",
    shows="batches failing the first check: inputs and targets each a torch.long tensor of shape "
    "(batch_size, context_length) on the device",
)
def get_batch_keeps_token_dtype(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = torch.from_numpy(np.asarray(dataset[starts.numpy()[:, None] + np.arange(context_length + 1)])).to(device)
    return w[:, :-1], w[:, 1:]  # uint16 or int32 like the token file, not torch.long


@mistake(
    "get_batch-reads_whole_file",
    data,
    "get_batch",
    diagnosis="get_batch copying the whole token file into memory (np.array(dataset)) to take a few windows",
)
def get_batch_reads_whole_file(dataset, batch_size, context_length, device, generator=None):
    tokens = np.array(dataset)  # a copy of the whole token file in memory
    starts = torch.randint(0, len(tokens) - context_length, (batch_size,), generator=generator)
    w = _windows(tokens, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


@variant("get_batch-numpy_slices", data, "get_batch")
def get_batch_numpy_slices(dataset, batch_size, context_length, device, generator=None):
    """Correct, written otherwise: one NumPy slice per row."""
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator).tolist()
    rows = np.stack([np.asarray(dataset[s : s + context_length + 1], dtype=np.int64) for s in starts])
    return torch.tensor(rows[:, :-1], device=device), torch.tensor(rows[:, 1:], device=device)


@mistake(
    "checkpoint-optimizer_state_not_saved",
    serialization,
    "save_checkpoint",
    diagnosis="save_checkpoint keeping the optimizer's hyper-parameters but not its state (AdamW's moments and "
    "step count restart at zero)",
    shows=OPTIMIZER_STATE_LOST,
)
def save_checkpoint_without_optimizer_state(model, optimizer, iteration, out):
    optimizer_state = {"state": {}, "param_groups": optimizer.state_dict()["param_groups"]}  # hyper-parameters only
    serialization.write_checkpoint(
        {"model": model.state_dict(), "optimizer": optimizer_state, "iteration": iteration}, out
    )


@mistake(
    "checkpoint-optimizer_not_loaded",
    serialization,
    "load_checkpoint",
    diagnosis="load_checkpoint restoring the model but not the optimizer (AdamW's moments and step count "
    "restart at zero)",
    shows=OPTIMIZER_STATE_LOST,
)
def load_checkpoint_skips_optimizer(src, model, optimizer):
    state = serialization.read_checkpoint(src)
    model.load_state_dict(state["model"])
    return state["iteration"]  # the optimizer's moments and step count start again from zero


@mistake(
    "checkpoint-iteration_not_restored",
    serialization,
    "load_checkpoint",
    diagnosis="load_checkpoint returning 0 instead of the stored iteration",
)
def load_checkpoint_iteration_zero(src, model, optimizer):
    state = serialization.read_checkpoint(src)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return 0  # the iteration is not restored


@mistake(
    "checkpoint-model_loaded_into_a_copy",
    serialization,
    "load_checkpoint",
    diagnosis="load_checkpoint loading the weights into a new model object, not into the model it was given",
)
def load_checkpoint_into_a_copy(src, model, optimizer):
    state = serialization.read_checkpoint(src)
    model = copy.deepcopy(model)  # rebinding the name: the caller's model keeps its old parameters
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["iteration"]
