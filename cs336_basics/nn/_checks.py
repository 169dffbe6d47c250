"""Argument checks shared by the kernels and modules.

Each raises ValueError or TypeError whose message names the argument, what was
expected and what was given, so a mistake surfaces at the call site rather than
as a bare traceback from deep inside torch.
"""

import torch

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def check_float(name: str, tensor: torch.Tensor) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have a floating dtype {FLOAT_DTYPES}, got {tensor.dtype}")


def check_shape(name: str, tensor: torch.Tensor, expected: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(tensor.shape)}")


def check_last_dim(name: str, tensor: torch.Tensor, expected: int, what: str) -> None:
    if tensor.dim() == 0 or tensor.shape[-1] != expected:
        raise ValueError(f"{name} must have last dimension {what}={expected}, got shape {tuple(tensor.shape)}")


def check_same_dtype(name: str, tensor: torch.Tensor, other_name: str, other: torch.Tensor) -> None:
    if tensor.dtype != other.dtype:
        raise TypeError(
            f"{name} has dtype {tensor.dtype} but {other_name} has dtype {other.dtype}; cast one so they match"
        )


def check_positive(name: str, value: int | float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def check_dim(name: str, tensor: torch.Tensor, dim: int) -> None:
    if not -tensor.dim() <= dim < max(tensor.dim(), 1):
        raise ValueError(
            f"dim must be in [{-tensor.dim()}, {tensor.dim() - 1}] for {name} of shape {tuple(tensor.shape)}, got {dim}"
        )


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape that `shapes` broadcast to (NumPy's rules: align on the right, each size equal or
    1), or None if they do not broadcast. Plain Python: torch.broadcast_shapes imports sympy on
    its first call, 0.4 s."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(1, ndim + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))
