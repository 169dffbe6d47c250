"""How an output is compared with a stored expected tensor, and how a mismatch is explained.

Error metric, one number per element: |actual - expected| / (|expected| + scale), where
scale = RMS(expected). It is a relative error where the output is large and an error relative
to the output's typical size where it is near zero, so one tolerance per case serves both.
Tolerances are measured floors times a margin; see tests/README.md.
"""

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass
class Comparison:
    ok: bool
    message: str
    max_abs_err: float = float("nan")
    max_scaled_err: float = float("nan")


def _same_special(a: Tensor, e: Tensor) -> Tensor:
    """Where e is inf or NaN and a holds the same value: entries that agree."""
    return ~torch.isfinite(e) & ((a == e) | (a.isnan() & e.isnan()))


def _scale(expected: Tensor) -> float:
    """RMS of the finite entries of `expected` (float64); 1 if there are none or it is 0."""
    finite = expected[torch.isfinite(expected)]
    scale = float(finite.pow(2).mean().sqrt()) if finite.numel() else 1.0
    return scale if scale > 0 else 1.0


def _scaled(diff: Tensor, expected: Tensor, scale: float) -> Tensor:
    return diff.abs() / (expected.abs() + scale)


def scaled_error(actual: Tensor, expected: Tensor) -> Tensor:
    """|a - e| / (|e| + RMS(e)), elementwise, in float64; 0 where a and e hold the same inf or
    NaN, inf where they disagree on one."""
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    err = _scaled(a - e, e, _scale(e))
    err = torch.where(_same_special(a, e), torch.zeros_like(err), err)
    return torch.where(err.isnan(), torch.full_like(err, float("inf")), err)


def abs_error(actual: Tensor, expected: Tensor) -> Tensor:
    """|a - e|, elementwise, in float64, with the same treatment of inf and NaN as scaled_error."""
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    err = torch.where(_same_special(a, e), torch.zeros_like(a), (a - e).abs())
    return torch.where(err.isnan(), torch.full_like(err, float("inf")), err)


def _differing(got: float, expected: float) -> str:
    """ "got G, expected E" with the fewest significant digits (at least 6) that tell them apart."""
    for digits in range(6, 18):
        g, e = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if g != e:
            break
    return f"{g}, expected {e}"


def compare(
    actual, expected: Tensor, tol: float, out_dtype: torch.dtype | None = None, reveal_values: bool = True
) -> Comparison:
    """Shape and dtype first, then the largest errors, where they are and how many exceed tol.
    reveal_values=False (hidden tests) leaves out the max abs error and the worst element's index
    and values: with an all-zero output, or with the index, they would give away expected values."""
    if not isinstance(actual, Tensor):
        return Comparison(False, f"expected a torch.Tensor, got {type(actual).__name__}")
    if tuple(actual.shape) != tuple(expected.shape):
        return Comparison(False, f"shape mismatch: got {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if out_dtype is not None and actual.dtype != out_dtype:
        return Comparison(False, f"dtype mismatch: got {actual.dtype}, expected {out_dtype} (the inputs' dtype)")
    if out_dtype is not None and not out_dtype.is_floating_point:
        return _compare_ids(actual, expected, reveal_values)
    err = scaled_error(actual, expected)
    abs_err = abs_error(actual, expected)
    max_abs = float(abs_err.max()) if abs_err.numel() else 0.0
    max_err = float(err.max()) if err.numel() else 0.0
    bad = err > tol
    if not bad.any():
        return Comparison(True, "ok", max_abs, max_err)
    worst = tuple(int(i) for i in np.unravel_index(int(err.argmax()), tuple(err.shape)))  # torch's is slow to load
    n_bad, n = int(bad.sum()), err.numel()
    message = f"{n_bad} of {n} elements ({100 * n_bad / n:.1f}%) are off by more than the tolerance {tol:.1e}\n  "
    if reveal_values:
        message += (
            f"max abs error {max_abs:.3e}, max scaled error {max_err:.3e} (|a-e| / (|e| + rms(e)))\n"
            f"  worst at index {worst}: got {_differing(float(actual.detach()[worst]), float(expected[worst]))}"
        )
    else:
        message += f"max scaled error {max_err:.3e} (|a-e| / (|e| + rms(e)))"
    return Comparison(False, message, max_abs, max_err)


def _compare_ids(actual: Tensor, expected: Tensor, reveal_values: bool) -> Comparison:
    """Token ids compared as ids: equal, or the first step (flat position) where they diverge."""
    a, e = actual.detach().cpu().reshape(-1).long(), expected.detach().cpu().reshape(-1).long()
    differ = (a != e).nonzero()
    if not differ.numel():
        return Comparison(True, "ok", 0.0, 0.0)
    step, n_bad = int(differ[0]), int(differ.numel())
    message = f"the token ids diverge at step {step} ({n_bad} of {a.numel()} ids differ)"
    if reveal_values:
        message += f"\n  from step {step}: got {a[step : step + 8].tolist()}, expected {e[step : step + 8].tolist()}"
    return Comparison(False, message, float("nan"), float("inf"))


# The diagnosis of an output in another dtype than the inputs' (named by the dtype alone: its values may be right)
WRONG_DTYPE = (
    "code that returns its float32 computation without casting back to the input's dtype (or a module "
    "that ignored its `dtype` argument)"
)


# A fingerprint several known wrong implementations share is stored with what the output shows,
# after this prefix, instead of one mistake's name (staff/make_fixtures.py).
SHOWS = "shows: "


def hints(named: list[str]) -> str:
    """The lines a failed snapshot test adds for what likely_mistakes found."""
    return "".join(
        f"\n  what your output shows: {d.removeprefix(SHOWS)}"
        if d.startswith(SHOWS)
        else f"\n  likely mistake: your output equals what {d} gives"
        for d in named
    )


def fingerprint_matches(fp, actual: Tensor, expected: Tensor, tol: float) -> bool:
    """Whether `actual` (same shape as `expected`) reproduces the fingerprint: at every probed
    index within tol of the wrong output, on the scale of the expected output."""
    a, e = actual.detach().double().cpu().reshape(-1), expected.detach().double().cpu().reshape(-1)
    ours = a[fp.index]
    off = _scaled(ours - fp.value, e[fp.index], _scale(e))  # the distance scaled_error measures, to the wrong output
    return bool(((off <= tol) | _same_special(ours, fp.value)).all())


def likely_mistakes(actual: Tensor, fixture) -> list[str]:
    """The diagnoses of the known wrong implementations whose fingerprint `actual` reproduces:
    at every probed index, within the case's tolerance of the wrong output (on the scale of the
    expected output), where the right answer is further away than that; for an output of the
    wrong shape, the mistakes whose output has that shape."""
    if not isinstance(actual, Tensor):
        return []
    out_dtype = fixture.out_dtype
    if out_dtype is not None and out_dtype.is_floating_point and actual.dtype != out_dtype:
        return [WRONG_DTYPE]
    if tuple(actual.shape) != tuple(fixture.expected.shape):
        return [fp.diagnosis for fp in fixture.mistakes.values() if fp.shape == tuple(actual.shape)]
    return [
        fp.diagnosis
        for fp in fixture.mistakes.values()
        if fp.shape is None and fingerprint_matches(fp, actual, fixture.expected, fixture.tol)
    ]


# Tolerance policy (tests/README.md): tol = MARGIN x max(measured floor, unit roundoff of the dtype).
# The floor is the larger scaled error, against the float64 truth, of this reference and of the
# PyTorch built-in run in the same dtype; never below half an ulp, which any correct
# implementation may differ by.
UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float64: 2.0**-53}
MARGIN = {torch.float32: 10.0, torch.float64: 10.0, torch.float16: 4.0, torch.bfloat16: 4.0}


def tolerance(floor: float, dtype: torch.dtype = torch.float32) -> float:
    """MARGIN[dtype] x max(floor, unit roundoff of dtype)."""
    return MARGIN[dtype] * max(floor, UNIT_ROUNDOFF[dtype])
