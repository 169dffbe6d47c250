"""Independent oracles: this package's kernels written with PyTorch's built-ins, with the same
signatures. None of this is our code path; the reference must agree with it.

`builtin_kernels()` swaps them into `cs336_basics.nn.functional` for a `with` block, so any
adapter or module then computes with PyTorch's built-ins through the same plumbing (weight
loading, reshapes): that is how a whole case is checked against an oracle.
"""

import contextlib

import torch.nn.functional as TF

from cs336_basics.nn import functional as F

ACTIVATIONS = {
    "silu": TF.silu,
    "gelu": TF.gelu,
    "gelu_tanh": lambda x: TF.gelu(x, approximate="tanh"),
    "relu": TF.relu,
}


def swiglu_ffn(x, w1, w2, w3, activation="silu"):
    """W2(act(W1 x) * W3 x) with F.linear, like functional.swiglu_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1)) * TF.linear(x, w3), w2)


def positionwise_ffn(x, w1, b1, w2, b2, activation="gelu"):
    """act(x W1^T + b1) W2^T + b2 with F.linear, like functional.positionwise_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1, b1)), w2, b2)


BUILTIN_KERNELS = {
    "linear": TF.linear,
    "embedding": lambda token_ids, weight: TF.embedding(token_ids, weight),
    "silu": TF.silu,
    "gelu": lambda x, approximate="none": TF.gelu(x, approximate=approximate),
    "softmax": lambda x, dim=-1: TF.softmax(x, dim=dim),
    "rmsnorm": lambda x, weight, eps=1e-5, cast_before_gain=False: TF.rms_norm(x, (x.shape[-1],), weight, eps),
    "layernorm": lambda x, weight, bias, eps=1e-5: TF.layer_norm(x, (x.shape[-1],), weight, bias, eps),
    "swiglu_ffn": swiglu_ffn,
    "positionwise_ffn": positionwise_ffn,
}


@contextlib.contextmanager
def builtin_kernels():
    """Inside the block, cs336_basics.nn.functional's kernels are PyTorch's built-ins."""
    saved = {name: getattr(F, name) for name in BUILTIN_KERNELS}
    try:
        for name, fn in BUILTIN_KERNELS.items():
            setattr(F, name, fn)
        yield
    finally:
        for name, fn in saved.items():
            setattr(F, name, fn)
