import pytest
import torch

from cs336_basics.testing import compare

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
