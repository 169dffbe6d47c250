"""Training batches from a token stream: random windows of context_length + 1 consecutive
tokens, split into inputs (the first context_length) and next-token targets (the last
context_length), as in CS336 assignment 1, section 5.1."""

import numbers

import numpy as np
import numpy.typing as npt
import torch
from jaxtyping import Int
from torch import Tensor


def checked_device(device: str | torch.device, argument: str = "device") -> torch.device:
    """`device` as a torch.device, or a RuntimeError naming it if no tensor can be placed there
    (an unknown name, CUDA not built or no such GPU)."""
    try:
        resolved = torch.device(device)
        torch.empty(0, device=resolved)
    except (RuntimeError, AssertionError, TypeError, ValueError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise RuntimeError(f"{argument}={device!r} is not available here ({reason})") from None
    return resolved


def _check_get_batch_args(dataset, batch_size, context_length) -> None:
    if not isinstance(dataset, np.ndarray):
        raise TypeError(
            f"dataset must be a 1-D NumPy array of token ids (np.memmap works), got {type(dataset).__name__}"
        )
    if dataset.ndim != 1 or not np.issubdtype(dataset.dtype, np.integer):
        raise ValueError(
            f"dataset must be 1-D with an integer dtype, got shape {dataset.shape} and dtype {dataset.dtype}"
        )
    for name, value in (("batch_size", batch_size), ("context_length", context_length)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if len(dataset) < context_length + 1:
        raise ValueError(
            f"dataset must hold at least context_length + 1 = {context_length + 1} tokens "
            f"(inputs and their next-token targets), got {len(dataset)}"
        )


def get_batch(
    dataset: npt.NDArray,
    batch_size: int,
    context_length: int,
    device: str | torch.device,
    generator: torch.Generator | None = None,
) -> tuple[Int[Tensor, "batch_size context_length"], Int[Tensor, "batch_size context_length"]]:
    """batch_size random windows of the 1-D token array `dataset`: inputs x[b] = dataset[s_b :
    s_b + context_length] and next-token targets y[b] = dataset[s_b + 1 : s_b + context_length + 1],
    both int64 (torch.long) on `device`, with each start s_b drawn uniformly from the
    len(dataset) - context_length valid ones, 0 to len(dataset) - context_length - 1. Only the
    sampled tokens are read, so an np.memmap of a token file stays on disk. `generator` (a CPU
    torch.Generator) draws the starts; None uses torch's global generator (torch.manual_seed)."""
    _check_get_batch_args(dataset, batch_size, context_length)
    device = checked_device(device)
    # BEGIN SOLUTION
    windows_view = np.lib.stride_tricks.sliding_window_view(dataset, context_length + 1)  # (n - ctx, ctx + 1), a view
    starts = torch.randint(len(windows_view), (batch_size,), generator=generator).numpy()
    chosen = windows_view[starts].astype(np.int64)  # fancy indexing reads only these rows
    batch = torch.from_numpy(chosen).to(device)
    x, y = batch[:, :context_length].contiguous(), batch[:, 1:].contiguous()
    return x, y
    # END SOLUTION
