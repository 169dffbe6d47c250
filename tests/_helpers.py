import traceback
from pathlib import Path

import pytest
import torch

from cs336_basics.testing import compare

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "cs336_basics"

# Kernel-vs-built-in checks run in float64, where the measured agreement floor is a few ulps;
# tolerance(floor, torch.float64) turns it into 10 x max(floor, 2^-53).
F64 = torch.float64


def assert_close(actual, expected, tol: float, what: str = "") -> None:
    result = compare(actual, expected, tol, out_dtype=expected.dtype)
    if not result.ok:
        pytest.fail(f"{what}: {result.message}", pytrace=False)


def rand(*shape: int, std: float = 1.0, mean: float = 0.0, seed: int = 0, dtype=F64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * std + mean).to(dtype)


def regression_step(model, optimizer, k: int) -> None:
    """One optimizer step of a 6 -> 3 model on step k's batch (seeded by k: the same batch whoever runs it)."""
    g = torch.Generator().manual_seed(k)
    x, target = torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)
    optimizer.zero_grad()
    ((model(x) - target) ** 2).mean().backward()
    optimizer.step()


def your_frame(error: BaseException) -> str | None:
    """Where the package (your code) was when `error` was raised: "path:line, in function" and the
    line of its innermost frame; None if the traceback never went through the package."""
    ours = [f for f in traceback.extract_tb(error.__traceback__) if PACKAGE_DIR in Path(f.filename).resolve().parents]
    if not ours:
        return None
    f = ours[-1]
    return f"{Path(f.filename).resolve().relative_to(PACKAGE_DIR.parent)}:{f.lineno}, in {f.name}\n    {f.line}"


def raised(error: BaseException) -> str:
    """ "TypeName: message", then the line of your code it was raised from (or through)."""
    frame = your_frame(error)
    return f"{type(error).__name__}: {error}".strip() + (f"\n  raised from your code at {frame}" if frame else "")
