"""Input builders for the fixture cases: one per adapter, shapes and scales as arguments, so
public and hidden cases share them. Each returns `make(rng) -> the adapter's keyword arguments`.

Random values come from NumPy's PCG64 generator (`numpy.random.default_rng(seed)`): its
integer stream and its normal and uniform draws are specified bit for bit, independent of the
CPU and of PyTorch's vectorised kernels, so every machine draws the same inputs from a seed.
Values are drawn in float64 and rounded once to float32 (the case's dtype comes later).

Witness inputs separate right from almost right; each says what it witnesses.
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


def linear_case(batch: tuple[int, ...], d_in: int, d_out: int, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, weights=linear_weight(rng, d_out, d_in), in_features=randn(rng, *batch, d_in, std=x_std)
    )


def embedding_case(batch: tuple[int, ...], vocab_size: int, d_model: int) -> Make:
    def make(rng):
        ids = randint(rng, 0, vocab_size, batch)
        ids.view(-1)[:2] = torch.tensor([0, vocab_size - 1])  # witness: both ends of the vocabulary
        return dict(vocab_size=vocab_size, d_model=d_model, weights=randn(rng, vocab_size, d_model), token_ids=ids)

    return make


def pointwise_case(batch: tuple[int, ...], std: float, extremes: tuple[float, ...] = (), **scalars) -> Make:
    def make(rng):
        x = randn(rng, *batch, std=std)
        if extremes:  # witness values written into the first entries
            x.view(-1)[: len(extremes)] = torch.tensor(extremes)
        return dict(in_features=x, **scalars)

    return make


def softmax_case(batch: tuple[int, ...], dim: int, std: float, mean: float = 0.0, mask_fraction: float = 0.0) -> Make:
    def make(rng):
        x = randn(rng, *batch, std=std, mean=mean)
        if mask_fraction:  # -inf entries, never a whole slice along dim
            mask = rand(rng, *batch) < mask_fraction
            mask.select(dim, 0).fill_(False)
            x = x.masked_fill(mask, float("-inf"))
        return dict(in_features=x, dim=dim)

    return make


def rmsnorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(rng, d_model, std=0.5, mean=1.0),  # witness: a gain that is not all ones
        in_features=randn(rng, *batch, d_model, std=x_std),
    )


def layernorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0, x_mean: float = 0.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(rng, d_model, std=0.5, mean=1.0),
        biases=randn(rng, d_model, std=0.5),
        in_features=randn(rng, *batch, d_model, std=x_std, mean=x_mean),
    )


def swiglu_case(batch: tuple[int, ...], d_model: int, d_ff: int, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(rng, d_ff, d_model),
        w2_weight=linear_weight(rng, d_model, d_ff),
        w3_weight=linear_weight(rng, d_ff, d_model),
        in_features=randn(rng, *batch, d_model, std=x_std),
    )


def positionwise_case(batch: tuple[int, ...], d_model: int, d_ff: int, activation: str = "gelu") -> Make:
    return lambda rng: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(rng, d_ff, d_model),
        b1=randn(rng, d_ff, std=0.5),
        w2_weight=linear_weight(rng, d_model, d_ff),
        b2=randn(rng, d_model, std=0.5),
        in_features=randn(rng, *batch, d_model),
        activation=activation,
    )


def ffn_block_case(
    batch: tuple[int, ...], d_model: int, d_ff: int, norm: str, ffn: str, activation: str, bias: bool = False
) -> Make:
    def make(rng):
        w = {"ffn_norm.weight": randn(rng, d_model, std=0.5, mean=1.0)}
        if norm == "layernorm" and bias:
            w["ffn_norm.bias"] = randn(rng, d_model, std=0.5)
        w["feed_forward.w1.weight"] = linear_weight(rng, d_ff, d_model)
        w["feed_forward.w2.weight"] = linear_weight(rng, d_model, d_ff)
        if ffn == "swiglu":
            w["feed_forward.w3.weight"] = linear_weight(rng, d_ff, d_model)
        elif bias:
            w["feed_forward.w1.bias"] = randn(rng, d_ff, std=0.5)
            w["feed_forward.w2.bias"] = randn(rng, d_model, std=0.5)
        return dict(
            d_model=d_model, d_ff=d_ff, weights=w, in_features=randn(rng, *batch, d_model, std=2.0, mean=0.5),
            norm=norm, ffn=ffn, activation=activation, eps=1e-5, bias=bias,
        )

    return make


def parallel_column_case(batch: tuple[int, ...], d_in: int, d_out: int, world_size: int, gather_output: bool = True) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, world_size=world_size, weights=linear_weight(rng, d_out, d_in),
        in_features=randn(rng, *batch, d_in), gather_output=gather_output,
    )  # fmt: skip


def parallel_row_case(batch: tuple[int, ...], d_in: int, d_out: int, world_size: int) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, world_size=world_size, weights=linear_weight(rng, d_out, d_in),
        in_features=randn(rng, *batch, d_in),
    )  # fmt: skip


def parallel_ffn_case(batch: tuple[int, ...], d_model: int, d_ff: int, world_size: int, x_std: float = 1.0) -> Make:
    swiglu = swiglu_case(batch, d_model, d_ff, x_std)
    return lambda rng: {"world_size": world_size, **swiglu(rng)}
