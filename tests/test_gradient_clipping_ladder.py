"""gradient_clipping, rung by rung: the value it returns, whether the gradients change, whether
one factor scales them all, and that factor (tests/_ladder.py)."""

import torch

from cs336_basics import optim

from ._helpers import rand
from ._ladder import climb_failed, rung

EPS = 1e-6


def grads_of_norms(*norms: float) -> list[torch.nn.Parameter]:
    """Parameters (shapes 4x5, 7, 3x2, ...) whose gradients have these L2 norms, in float64."""
    shapes = [(4, 5), (7,), (3, 2), (6,)]
    params = []
    for i, norm in enumerate(norms):
        g = rand(*shapes[i % len(shapes)], seed=20 + i)
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g * (norm / g.norm())
        params.append(p)
    return params


def factors(params, before) -> list[float]:
    """Each gradient's after/before ratio (its mean over entries)."""
    return [float((p.grad / g).mean()) for p, g in zip(params, before, strict=True)]


NORMS = (3.0, 4.0, 12.0)  # together: 13
TOTAL = 13.0


@rung(1)
def test_gradient_clipping_returns_the_l2_norm_of_all_gradients_together():
    params = grads_of_norms(*NORMS)
    got = optim.gradient_clipping(params, 100.0)
    got = float(got) if isinstance(got, (torch.Tensor, float, int)) else got
    if not isinstance(got, float):
        climb_failed(f"gradient_clipping returned {got!r}", "return the norm of all gradients before clipping")
    if abs(got - TOTAL) <= 1e-12 * TOTAL:
        return
    shown = {
        TOTAL**2: "the sum of squares: the square root is missing",
        TOTAL**2 / sum(p.grad.numel() for p in params): "the mean of the squares, not their sum under a root",
        (TOTAL**2 / sum(p.grad.numel() for p in params)) ** 0.5: "the root of the mean of the squares (RMS)",
        max(NORMS): "the largest parameter's own norm",
        sum(NORMS): "the sum of the parameters' own norms",
        NORMS[-1]: "the last parameter's own norm",
    }
    seen = next((what for value, what in shown.items() if abs(got - value) <= 1e-9 * value), "none of the usual norms")
    climb_failed(
        f"gradients with L2 norms {NORMS} (together sqrt(3^2 + 4^2 + 12^2) = 13) gave {got:.6g}: {seen}",
        "the norm of all gradients together: sqrt of the sum over every parameter of every squared entry",
    )


@rung(2)
def test_gradient_clipping_changes_the_gradients_when_their_norm_is_above_the_max():
    params = grads_of_norms(*NORMS)
    before = [p.grad.clone() for p in params]
    optim.gradient_clipping(params, 1.0)
    if all(torch.equal(p.grad, g) for p, g in zip(params, before, strict=True)):
        climb_failed(
            "gradients of total norm 13 and max_l2_norm 1.0: no gradient changed",
            "scale each p.grad in place (p.grad.mul_(factor)); `g = g * factor` only rebinds a name, and an "
            "iterator of parameters (model.parameters()) is empty the second time you loop over it",
        )


@rung(3)
def test_gradient_clipping_scales_every_gradient_by_one_factor():
    params = grads_of_norms(*NORMS)
    before = [p.grad.clone() for p in params]
    optim.gradient_clipping(params, 1.0)
    ratios = factors(params, before)
    uniform = all(
        torch.allclose(p.grad, g * r, rtol=1e-12, atol=0) for p, g, r in zip(params, before, ratios, strict=True)
    )
    if not uniform:
        climb_failed(
            "within a parameter the entries were not all multiplied by one number (clamped entries, or an "
            "entry-wise operation)",
            "multiply every gradient by the same scalar max_l2_norm / (norm + eps)",
        )
    if max(ratios) - min(ratios) > 1e-12 * max(ratios):
        climb_failed(
            f"gradients of norms {NORMS} were scaled by different factors {[f'{r:.4g}' for r in ratios]}",
            "one norm over all gradients together and one factor for all of them, not one per parameter",
        )


@rung(4)
def test_gradient_clipping_factor_is_max_over_the_norm_plus_eps():
    params = grads_of_norms(*NORMS)
    before = [p.grad.clone() for p in params]
    optim.gradient_clipping(params, 2.0)
    got, want = factors(params, before)[0], 2.0 / (TOTAL + EPS)
    if abs(got - want) > 1e-12 * want:
        climb_failed(
            f"total norm 13, max_l2_norm 2.0: the gradients were scaled by {got:.12g}, not 2 / (13 + 1e-6) = {want:.12g}",
            "the factor max_l2_norm / (norm + 1e-6), with norm the L2 norm of all gradients together",
        )


@rung(5)
def test_gradient_clipping_leaves_gradients_below_the_max_unchanged():
    params = grads_of_norms(*NORMS)
    before = [p.grad.clone() for p in params]
    optim.gradient_clipping(params, 20.0)
    if not all(torch.equal(p.grad, g) for p, g in zip(params, before, strict=True)):
        climb_failed(
            f"total norm 13 below max_l2_norm 20: the gradients were scaled by {factors(params, before)[0]:.6g}",
            "scale only when the norm exceeds max_l2_norm",
        )


@rung(6)
def test_gradient_clipping_reads_an_iterator_of_parameters_once():
    params = grads_of_norms(*NORMS)
    before = [p.grad.clone() for p in params]
    optim.gradient_clipping((p for p in params), 1.0)  # what model.parameters() gives: empty after one pass
    if all(torch.equal(p.grad, g) for p, g in zip(params, before, strict=True)):
        climb_failed(
            "parameters given as a generator (like model.parameters()), total norm 13, max_l2_norm 1.0: "
            "no gradient changed",
            "a generator is empty the second time you loop over it: make a list of the gradients first",
        )


@rung(7)
def test_gradient_clipping_of_float16_gradients_whose_squares_overflow_float16():
    params = grads_of_norms(*(n * 100 for n in NORMS))  # total 1300: squares up to ~1e5 > float16's 65504
    for p in params:
        p.data, p.grad = p.data.half(), p.grad.half()
    before = [p.grad.float() for p in params]
    norm = optim.gradient_clipping(params, 1.0)
    got = factors([type("P", (), {"grad": p.grad.float()}) for p in params], before)
    if not (torch.isfinite(torch.as_tensor(float(norm))) and all(abs(f - 1 / 1300) < 2e-3 / 1300 for f in got)):
        climb_failed(
            f"float16 gradients of total norm 1300 gave norm {float(norm):.6g} and factors {[f'{f:.3g}' for f in got]}",
            "sum the squares in float32 (a float16 square above 65504 is inf): g.float().pow(2).sum()",
        )
