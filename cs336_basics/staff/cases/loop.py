"""get_batch and the checkpoint, the training loop's parts: the builders of their inputs, then their
cases and what they grade of the public tests, then their mistakes, accepted variants and confusers."""

import copy
from functools import partial

import numpy as np
import torch

from cs336_basics import data, serialization
from cs336_basics.staff.cases.case import EXACT_INT64, F32, F64, Case
from cs336_basics.staff.cases.draw import Make, randn
from cs336_basics.staff.mistakes import confuser, mistake, variant


def get_batch_generator_case(num_tokens: int, batch_size: int, context_length: int, num_batches: int) -> Make:
    """Distinct token ids and a generator seed (adapters.run_get_batch_generator_checks)."""

    def make(rng):
        ids = rng.choice(65536, size=num_tokens, replace=False).astype(np.int64)
        return dict(
            dataset=torch.from_numpy(ids),
            batch_size=batch_size,
            context_length=context_length,
            num_batches=num_batches,
            seed=int(rng.integers(2**31)),
        )

    return make


def get_batch_case(
    num_tokens: int,
    batch_size: int,
    context_length: int,
    num_batches: int,
    vocab_size: int = 65536,
    token_dtype: str = "uint16",
) -> Make:
    """A token stream of distinct ids (a row's first token names its start; not arange, so
    targets = inputs + 1 is wrong) and a seed for the global generators (adapters.run_get_batch_checks)."""

    def make(rng):
        ids = rng.choice(vocab_size, size=num_tokens, replace=False).astype(np.int64)
        return dict(
            dataset=torch.from_numpy(ids),
            batch_size=batch_size,
            context_length=context_length,
            num_batches=num_batches,
            seed=int(rng.integers(2**31)),
            token_dtype=token_dtype,
        )

    return make


def checkpoint_case(
    shapes: dict[str, tuple[int, ...]],
    steps: int,
    steps_before: int,
    lr: float = 1e-2,
    weight_decay: float = 0.1,
    to: str = "path",
) -> Make:
    """Weights and one gradient per optimizer step for each (adapters.run_checkpoint_resume)."""

    def make(rng):
        weights = {name: randn(rng, *shape) for name, shape in shapes.items()}
        gradients = {name: randn(rng, steps, *shape) for name, shape in shapes.items()}
        return dict(
            weights=weights, gradients=gradients, steps_before=steps_before, lr=lr, weight_decay=weight_decay, to=to
        )

    return make


def _weights_and_a_buffer(rng) -> dict:
    """Two parameters and a buffer, three steps."""
    weights = {
        "w": torch.tensor(rng.standard_normal((4, 3)), dtype=F32),
        "b": torch.tensor(rng.standard_normal(3), dtype=F32),
    }
    return dict(weights=weights, scale=torch.tensor(rng.random(3) + 0.5, dtype=F32), steps=3)


get_batch_checks = partial(Case, component="get_batch", adapter="run_get_batch_checks", **EXACT_INT64)
get_batch_generator_checks = partial(
    Case, component="get_batch", adapter="run_get_batch_generator_checks", **EXACT_INT64
)
checkpoint_resume = partial(Case, component="checkpoint", adapter="run_checkpoint_resume")
checkpoint_checks = partial(Case, component="checkpoint", adapter="run_checkpoint_checks", **EXACT_INT64)


CASES = [
    # get_batch: 400 batches of 40 windows of 7 tokens from a uint16 token file of 72 distinct ids
    # (np.memmap), seeded; the output is 1 for each check of adapter_checks.GET_BATCH_CHECKS that holds
    # (exact: a correct get_batch fails one with probability < 1e-6). witness: one window repeated
    # in every row lumps the counts of its 65 starts into multiples of 40, beyond their bounds
    get_batch_checks("get_batch", seed=42, make=get_batch_case(72, 40, 7, 400)),
    get_batch_checks(
        "get_batch_uint32_long_windows",
        seed=134,
        make=get_batch_case(60, 16, 11, 300, vocab_size=2**20, token_dtype="uint32"),
    ),
    # hidden: one valid start only (context_length = len - 1); int32 token file of large ids with a
    # long context; batches of one row
    get_batch_checks("get_batch_one_start", hidden=True, seed=1401, make=get_batch_case(13, 4, 12, 50)),
    get_batch_checks(
        "get_batch_int32_long_context",
        hidden=True,
        seed=1402,
        make=get_batch_case(300, 12, 64, 400, vocab_size=1 << 20, token_dtype="int32"),
    ),
    get_batch_checks("get_batch_rows_of_one", hidden=True, seed=1403, make=get_batch_case(20, 1, 3, 600)),
    # what tests/test_get_batch.py asserts of the `generator` argument, and rows drawn independently
    get_batch_generator_checks(
        "get_batch_generator", hidden=True, seed=1404, make=get_batch_generator_case(60, 6, 4, 20)
    ),
    # checkpoint: 6 optimizer steps (adapter_checks.momentum_optimizer), save to a path, load into a fresh
    # model and optimizer, 4 more steps
    checkpoint_resume("checkpoint", seed=41, make=checkpoint_case({"w": (8, 6), "b": (6,)}, 10, 6), floor=2.6e-7),
    checkpoint_resume(
        "checkpoint_file_object_no_decay_f64",
        seed=135,
        make=checkpoint_case({"w": (5, 4)}, 7, 3, lr=5e-3, weight_decay=0.0, to="file"),
        floor=1.8e-17,  # PyTorch's generic CPU kernels (ATEN_CPU_CAPABILITY=default); 0 on x86-64's
        dtype=F64,
    ),
    # hidden: an in-memory file object, float64; saved before any step (empty optimizer state);
    # saved one step before the end, a 3-D parameter
    checkpoint_resume(
        "checkpoint_file_object_f64",
        hidden=True,
        seed=1411,
        make=checkpoint_case({"w1": (5, 7), "w2": (7, 3), "g": (3,)}, 9, 3, to="file"),
        floor=3.7e-17,  # PyTorch's generic CPU kernels (ATEN_CPU_CAPABILITY=default); 0 on x86-64's
        dtype=F64,
    ),
    checkpoint_resume(
        "checkpoint_before_any_step",
        hidden=True,
        seed=1412,
        make=checkpoint_case({"w": (4, 4)}, 5, 0, lr=3e-2),
        floor=1.1e-7,
    ),
    checkpoint_resume(
        "checkpoint_one_step_left",
        hidden=True,
        seed=1413,
        make=checkpoint_case({"t": (3, 4, 5), "b": (5,)}, 8, 7, lr=5e-2, weight_decay=0.01),
        floor=1.9e-7,
    ),
    # buffers, the optimizer's state and param groups, the model's own parameters, a strict load
    # (adapter_checks.CHECKPOINT_CHECKS)
    checkpoint_checks("checkpoint_buffers_and_strict_load", hidden=True, seed=1507, make=_weights_and_a_buffer),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "get_batch": {
        "test_get_batch_matches_fixture": ("get_batch",),
        "test_get_batch_shapes_dtype_and_device": ("get_batch",),
        "test_get_batch_inputs_are_windows_and_targets_are_the_next_tokens": ("get_batch",),
        "test_get_batch_every_start_is_drawn_uniformly": ("get_batch",),
        "test_get_batch_seeded_generator_is_reproducible": ("get_batch_generator",),
        "test_get_batch_global_seed_is_reproducible": ("get_batch",),
        "test_get_batch_one_valid_start": ("get_batch_one_start",),
        "test_get_batch_reads_a_uint16_memmap": ("get_batch",),
        "test_get_batch_reads_only_the_sampled_tokens_of_a_memmap": ("get_batch",),
        "test_get_batch_returns_inputs_and_targets_of_shape_batch_by_context": ("get_batch",),
        "test_get_batch_returns_int64_tokens": ("get_batch", "get_batch_uint32_long_windows"),
        "test_get_batch_puts_the_batch_on_the_requested_device": ("get_batch",),
        "test_get_batch_targets_are_the_inputs_moved_on_by_one_token": ("get_batch",),
        "test_get_batch_rows_are_consecutive_windows_of_the_tokens": ("get_batch",),
        "test_get_batch_draws_each_row_s_start_independently": ("get_batch", "get_batch_generator"),
        "test_get_batch_generator_decides_the_draw": ("get_batch_generator",),
        "test_get_batch_draws_the_first_and_the_last_window": ("get_batch",),
    },
    "checkpoint": {
        "test_checkpoint_matches_fixture": ("checkpoint", "checkpoint_file_object_f64"),
        "test_checkpoint_resumed_run_is_bit_identical": ("checkpoint", "checkpoint_file_object_f64"),
        "test_checkpoint_restores_the_optimizer_state_and_the_iteration": (
            "checkpoint_buffers_and_strict_load",
            "checkpoint",
        ),
        "test_checkpoint_loads_into_the_given_model_in_place": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_file_holds_the_state_dicts_and_the_iteration": (
            "checkpoint_buffers_and_strict_load",
            "checkpoint",
        ),
        "test_checkpoint_load_returns_the_iteration_saved": ("checkpoint_buffers_and_strict_load", "checkpoint"),
        "test_checkpoint_restores_the_model_s_weights": ("checkpoint_buffers_and_strict_load", "checkpoint"),
        "test_checkpoint_loads_into_the_model_s_own_parameters": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_restores_the_buffers": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_restores_the_optimizer_s_per_parameter_state": (
            "checkpoint_buffers_and_strict_load",
            "checkpoint",
        ),
        "test_checkpoint_restores_the_optimizer_s_param_groups": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_writes_to_a_path_a_str_and_a_file_object": ("checkpoint", "checkpoint_file_object_f64"),
        "test_checkpoint_of_another_model_is_refused": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_resumed_run_equals_a_run_never_stopped": ("checkpoint", "checkpoint_one_step_left"),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_get_batch_check_bounds_are_exact_binomial_tails": "the test's own statistics",
    "test_get_batch_memmap_residency_is_measurable_here": "the test machine",
    "test_get_batch_unavailable_device_raises_clear_error": "the given argument check",
    "test_checkpoint_write_replaces_the_file_whole_and_leaves_no_temporary": "the given write_checkpoint",
    "test_checkpoint_failed_write_keeps_the_old_file": "the given write_checkpoint",
    "test_checkpoint_truncated_file_raises_one_clear_error": "the given read_checkpoint",
    "test_checkpoint_foreign_file_raises_one_clear_error": "the given read_checkpoint",
    "test_checkpoint_of_another_kind_names_what_it_lacks": "the given read_checkpoint",
    "test_checkpoint_hostile_file_is_refused_without_running_its_code": "the given read_checkpoint",
    "test_checkpoint_missing_file_raises_file_not_found": "the given read_checkpoint",
    "test_checkpoint_iteration_may_be_a_numpy_integer": "CS336's adapters pass the iteration as an int",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- get_batch (data.get_batch) ------------------------------------------------------------------
# get_batch's and checkpoint's graded cases are scenarios (adapters.run_get_batch_checks, run_checkpoint_resume)
# whose output records behaviour, so behaviours are named by the output's fingerprint like any wrong value:
# which checks of the batches fail, or the iteration and parameters a resumed training ends with.


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


@confuser("get_batch-transposed", data, "get_batch")
def get_batch_transposed(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1].T.contiguous(), w[:, 1:].T.contiguous()


@confuser("get_batch-targets_are_inputs_plus_one", data, "get_batch")
def get_batch_targets_are_inputs_plus_one(dataset, batch_size, context_length, device, generator=None):
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, :-1] + 1  # the next token id, not the next token


@confuser("get_batch-reseeds_generator", data, "get_batch")
def get_batch_reseeds_generator(dataset, batch_size, context_length, device, generator=None):
    generator = torch.Generator().manual_seed(0)  # the same draw on every call
    starts = torch.randint(0, len(dataset) - context_length, (batch_size,), generator=generator)
    w = _windows(dataset, starts.numpy(), context_length, device)
    return w[:, :-1], w[:, 1:]


# ---- checkpoint (serialization.save_checkpoint, load_checkpoint) ---------------------------------

OPTIMIZER_STATE_LOST = (
    "a resumed training whose steps after the load are those of an optimizer starting again from zero "
    "(AdamW's moments and step count did not come back: saved, or loaded?)"
)


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
