"""get_batch, rung by rung: two tensors of the right shape, dtype and device; targets the inputs
moved on by one; rows that are windows; rows drawn independently; the generator deciding the
draw (tests/_ladder.py). Tokens are 0, 1, 2, ... so a row's first token is its start."""

import numpy as np
import torch

from cs336_basics import data

from ._ladder import climb_failed, rung
from .adapter_checks import most_common_distance, starts_are_independent
from .adapters import run_get_batch

TOKENS = np.arange(200, dtype=np.uint16)
BATCH, CONTEXT = 6, 5


def draw(generator=None, tokens=TOKENS):
    return data.get_batch(tokens, BATCH, CONTEXT, "cpu", generator=generator)


@rung(1)
def test_get_batch_returns_inputs_and_targets_of_shape_batch_by_context():
    out = run_get_batch(TOKENS, BATCH, CONTEXT, "cpu")
    if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
        climb_failed(f"get_batch returned {type(out).__name__}", "return a pair (inputs, targets) of tensors")
    for name, t in zip(("inputs", "targets"), out, strict=True):
        if tuple(t.shape) != (BATCH, CONTEXT):
            transposed = " (transposed)" if tuple(t.shape) == (CONTEXT, BATCH) else ""
            climb_failed(f"{name} of shape {tuple(t.shape)}{transposed} for batch_size 6, context_length 5",
                         "one row per batch entry: shape (batch_size, context_length)")  # fmt: skip


@rung(2)
def test_get_batch_returns_int64_tokens():
    for name, t in zip(("inputs", "targets"), run_get_batch(TOKENS, BATCH, CONTEXT, "cpu"), strict=True):
        if t.dtype != torch.long:
            climb_failed(f"{name} of dtype {t.dtype} from a uint16 token array",
                         "convert the tokens to torch.long (int64): embedding ids and cross_entropy targets")  # fmt: skip


@rung(3)
def test_get_batch_puts_the_batch_on_the_requested_device():
    for name, t in zip(("inputs", "targets"), run_get_batch(TOKENS, BATCH, CONTEXT, "cpu"), strict=True):
        if t.device != torch.device("cpu"):
            climb_failed(f"{name} on {t.device} for device 'cpu'", "move both tensors with .to(device)")


@rung(4)
def test_get_batch_targets_are_the_inputs_moved_on_by_one_token():
    # even tokens 0, 2, 4, ...: the next token is the input + 2, apart from the input's id + 1
    x, y = (t.long() for t in run_get_batch(2 * TOKENS, BATCH, CONTEXT, "cpu"))
    if not torch.equal(y, x + 2):
        same = ""
        if torch.equal(x, y):
            same = " (the targets equal the inputs)"
        elif torch.equal(y, x + 1):
            same = " (each target is its input's id + 1, not the next token)"
        climb_failed(
            f"on tokens 0, 2, 4, ... the first row is inputs {x[0].tolist()}, targets {y[0].tolist()}{same}",
            "targets = tokens[start + 1 : start + context_length + 1], inputs = tokens[start : start + context_length]",
        )


@rung(5)
def test_get_batch_rows_are_consecutive_windows_of_the_tokens():
    x, _ = (t.long() for t in run_get_batch(TOKENS, BATCH, CONTEXT, "cpu"))
    if not torch.equal(x - x[:, :1], torch.arange(CONTEXT).expand(BATCH, CONTEXT)):
        climb_failed(f"on tokens 0, 1, 2, ... a row {x[0].tolist()} is not a run of consecutive tokens",
                     "each row is tokens[start : start + context_length] for one start")  # fmt: skip


@rung(6)
def test_get_batch_draws_each_row_s_start_independently():
    g = torch.Generator().manual_seed(0)
    starts = np.stack([draw(g)[0][:, 0].numpy() for _ in range(300)])  # (300 batches, 6 rows)
    if (starts == starts[:, :1]).all():
        climb_failed("in 300 batches every row of a batch is the same window",
                     "draw batch_size starts, one per row (randint(..., (batch_size,)))")  # fmt: skip
    if not starts_are_independent(starts, len(TOKENS) - CONTEXT):
        distance, count, pairs = most_common_distance(starts)
        climb_failed(
            f"in 300 batches, {count} of {pairs} row pairs (rows 0 and 1, 2 and 3, 4 and 5) start {distance} "
            f"tokens apart; independent draws would share one distance in a few (e.g. {starts[0].tolist()})",
            "draw each row's start at random, not one start and its neighbours",
        )
    agree = float((starts[:-1] == starts[1:]).mean())  # consecutive batches: ~1/195 by chance
    if agree > 0.2:
        climb_failed(f"{agree:.0%} of the rows repeat the previous batch's start",
                     "draw new starts on every call (a generator reseeded inside get_batch repeats its draw)")  # fmt: skip


@rung(7)
def test_get_batch_generator_decides_the_draw():
    a = [draw(torch.Generator().manual_seed(5)) for _ in range(1)][0]
    torch.manual_seed(123), np.random.seed(123)
    b = draw(torch.Generator().manual_seed(5))
    if not torch.equal(a[0], b[0]):
        climb_failed("the same seeded generator gave different batches after the global seeds changed",
                     "draw the starts with the `generator` argument (torch.randint(..., generator=generator))")  # fmt: skip
    g = torch.Generator().manual_seed(5)
    first, second = draw(g), draw(g)
    if torch.equal(first[0], second[0]):
        climb_failed("two calls with one generator gave the same batch",
                     "do not reseed the generator (or make a new one) inside get_batch: draw from it as given")  # fmt: skip


@rung(8)
def test_get_batch_draws_the_first_and_the_last_window():
    g = torch.Generator().manual_seed(1)
    starts = {
        int(s) for _ in range(400) for s in data.get_batch(TOKENS[:12], BATCH, CONTEXT, "cpu", generator=g)[0][:, 0]
    }
    if starts != set(range(12 - CONTEXT)):
        climb_failed(
            f"on 12 tokens with context_length 5 the starts drawn were {sorted(starts)}, expected 0..6",
            "starts in [0, len(tokens) - context_length - 1]: randint(0, len(tokens) - context_length) (high excluded)",
        )
