"""Backward passes: every kernel's gradients agree with the PyTorch built-in's; masked softmax rows
and extreme SiLU inputs give finite gradients. (gradcheck, which imports sympy through torch's
symbolic shapes and costs a second of every run, is in the course staff's suite.)"""

import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.nn import functional as F

from ._helpers import F64, assert_close
from .floors import MaxErrors, tol
from .test_dtypes import BIG, DTYPES, KERNELS, NAMES, inputs

SHAPE = (2, 3, 4)  # small: the staff suite's gradcheck differentiates numerically, one input element at a time


def _inputs(name: str) -> list:
    """Float64 inputs of SHAPE with grad; relu's x is pushed to |x| >= 0.1, away from its kink."""
    args = inputs(name, SHAPE, scale=1.5, offset=0.2, seed=7)
    if name == "relu":
        args[0] = args[0] + 0.1 * args[0].sign()
    return [a.requires_grad_() if a.is_floating_point() else a for a in args]


def _grads(fn, args, seed: int = 11) -> tuple:
    """Gradients of sum(fn(*args) * c) for a fixed random cotangent c, wrt every float input."""
    out = fn(*args)
    c = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    leaves = [a for a in args if a.is_floating_point()]
    return torch.autograd.grad((out * c).sum(), leaves)


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of every kernel's gradients against the built-in's, over every
    float input, on _inputs(name) and _grads' cotangent (`seeds` do not apply: the test's inputs)."""
    floors = MaxErrors()
    for name, (ours, builtin) in KERNELS.items():
        args = _inputs(name)
        for g_ours, g_builtin in zip(_grads(ours, args), _grads(builtin, args), strict=True):
            floors.keep(f"{name}.grad", g_ours, g_builtin)
    return floors


@pytest.mark.parametrize("name", KERNELS)
def test_backward_matches_torch_builtin(name):
    ours, builtin = KERNELS[name]
    args = _inputs(name)
    for i, (g_ours, g_builtin) in enumerate(zip(_grads(ours, args), _grads(builtin, args), strict=True)):
        assert_close(g_ours, g_builtin, tol(f"{name}.grad"), f"{name} grad of float input {i}")


def _masked_logits() -> torch.Tensor:
    """3 rows of 5 logits: row 0 has two -inf entries, row 1 all but one, row 2 none."""
    x = inputs("softmax", (3, 5), scale=2.0, seed=5)[0]
    mask = torch.tensor([[0, 1, 0, 1, 0], [1, 1, 0, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    return x.masked_fill(mask, -float("inf")).requires_grad_()


def test_softmax_gradient_with_masked_entries_matches_builtin():
    x = _masked_logits()
    (g_ours,), (g_builtin,) = _grads(F.softmax, [x]), _grads(KERNELS["softmax"][1], [x])
    assert bool(g_ours.isfinite().all())
    assert bool((g_ours[x.isneginf()] == 0).all())
    # measured 1.2e-16 here, under the unmasked floor
    assert_close(g_ours, g_builtin, tol("softmax.grad"), "softmax grad with -inf entries")


def test_softmax_gradient_of_fully_masked_row_is_zero():
    x = _masked_logits().detach()
    x[0] = -float("inf")  # row 0 fully masked; torch.softmax would give NaN there
    x.requires_grad_()
    c = torch.randn(3, 5, generator=torch.Generator().manual_seed(11), dtype=F64)
    (g,) = torch.autograd.grad((F.softmax(x) * c).sum(), x)
    assert_close(g[0], torch.zeros(5, dtype=F64), 0.0, "g[0] vs torch.zeros(5, dtype=F64)")
    rest = x[1:].detach().requires_grad_()
    (g_rest,) = torch.autograd.grad((F.softmax(rest) * c[1:]).sum(), rest)
    assert_close(g[1:], g_rest, 0.0, "g[1:] vs g_rest")  # the masked row does not disturb the others


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
def test_silu_gradient_is_finite_at_extremes(dtype):
    x = torch.tensor([-BIG[dtype], -1e4, 1e4, BIG[dtype]], dtype=dtype, requires_grad=True)
    (g,) = torch.autograd.grad(F.silu(x).sum(), x)
    assert_close(
        g, torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=dtype), 0.0, "g vs torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=dtype)"
    )
    # Witness that these inputs are hard: the naive quotient's gradient is NaN at large negative x.
    (g_naive,) = torch.autograd.grad((x / (1 + torch.exp(-x))).sum(), x)
    assert bool(g_naive[:2].isnan().all())


def test_relu_gradient_at_zero_is_zero_like_builtin():
    x = torch.tensor([-1.0, 0.0, 1.0], dtype=F64, requires_grad=True)
    (g,) = torch.autograd.grad(F.relu(x).sum(), x)
    (g_builtin,) = torch.autograd.grad(TF.relu(x).sum(), x)
    assert_close(g, g_builtin, 0.0, "relu gradient vs the built-in's")
    assert_close(g, torch.tensor([0.0, 0.0, 1.0], dtype=F64), 0.0, "relu gradient at -1, 0, 1")


# tanh form: x^2 in its derivative overflows for |x| >~ 1.8e19 in float32/bfloat16 and the
# gradient is NaN there, as it is for torch's F.gelu(approximate="tanh") (measured at 3e38).
@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES.get)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradient_is_finite_at_extremes(approximate, dtype):
    values = [-1e4, 1e4] + ([-BIG[dtype], BIG[dtype]] if approximate == "none" else [])
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    (g,) = torch.autograd.grad(F.gelu(x, approximate=approximate).sum(), x)
    assert_close(
        g,
        torch.tensor([0.0, 1.0] * (len(values) // 2), dtype=dtype),
        0.0,
        "g vs torch.tensor([0.0, 1.0] * (len(values) // 2), dtype=dtype)",
    )
