"""How a case's inputs are drawn, and the helpers the builders of every area share: random
tensors (randn, rand, randint), a weight at the Linear init's scale (linear_weight), witness
values written over a builder's draw (edited), and a module's sizes with a seed (init_case).
`Make` is what every builder returns: rng -> the adapter's keyword arguments.

Random values come from NumPy's PCG64 generator (`numpy.random.default_rng(seed)`): its
integer stream and its normal and uniform draws are specified bit for bit, independent of the
CPU and of PyTorch's vectorised kernels, so every machine draws the same inputs from a seed.
Values are drawn in float64 and rounded once to float32 (the case's dtype comes later).
"""

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

Rng = np.random.Generator
Make = Callable[[Rng], dict]


def randn(rng: Rng, *shape: int, std: float = 1.0, mean: float = 0.0) -> Tensor:
    return torch.from_numpy((rng.standard_normal(shape) * std + mean).astype(np.float32))


def rand(rng: Rng, *shape: int) -> Tensor:
    """Uniform on [0, 1)."""
    return torch.from_numpy(rng.random(shape).astype(np.float32))


def randint(rng: Rng, low: int, high: int, shape: tuple[int, ...]) -> Tensor:
    """Uniform integers in [low, high), as int64."""
    return torch.from_numpy(rng.integers(low, high, size=shape, dtype=np.int64))


def linear_weight(rng: Rng, d_out: int, d_in: int) -> Tensor:
    """A weight at the scale of the Linear init, so activations stay O(1)."""
    return randn(rng, d_out, d_in, std=(2.0 / (d_in + d_out)) ** 0.5)


def edited(make: Make, edit: Callable[[dict], None]) -> Make:
    """A builder that draws as `make` does, then writes witness values in place with `edit`."""

    def make_edited(rng: Rng) -> dict:
        kwargs = make(rng)
        edit(kwargs)
        return kwargs

    return make_edited


def init_case(seeded: bool = True, **sizes: int) -> Make:
    """A module's sizes and, if `seeded`, a seed for torch's generator (adapters.run_*_init_checks)."""

    def make(rng):
        return dict(sizes, seed=int(rng.integers(2**31))) if seeded else dict(sizes)

    return make
