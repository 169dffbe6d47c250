"""Write and check the fixture files: `uv run cs336 fixtures` (`--check` compares instead of
writing; `--redraw NAME...` draws a case's inputs again). Public fixtures go to fixtures/,
hidden ones to hidden_fixtures/.

The stored inputs are the source of truth. They are drawn from the case's seed only when its
file is missing or on `--redraw`; otherwise the expected output is recomputed from the stored
inputs. So a machine whose float64 `exp` or summation order differs in the last bit never
rewrites an input, and rewrites an expected output only if it moved by more than
DRIFT_FRACTION of the case's tolerance (it never does: see README, "Fixtures").
"""

from pathlib import Path

import numpy as np
import torch

from cs336_basics.fixture_io import FIXTURES_DIR, Fixture, load_fixture, save_fixture
from cs336_basics.staff.cases import CASES, HIDDEN_FIXTURES_DIR, Case
from cs336_basics.staff.reference import expected_output, map_tensors
from cs336_basics.testing import scaled_error

DRIFT_FRACTION = 0.01  # a recomputed expected output may move by this share of the tolerance


def draw(case: Case) -> dict:
    """The case's inputs from its seed, floating-point tensors cast to the case's dtype."""
    kwargs = case.make(np.random.default_rng(case.seed))
    return map_tensors(kwargs, lambda t: t.to(case.dtype) if t.is_floating_point() else t)


def generate(case: Case, inputs: dict | None = None) -> Fixture:
    """The case's fixture: `inputs` (default: drawn from the seed) and their float64 expected output."""
    inputs = draw(case) if inputs is None else inputs
    expected = expected_output(case.adapter, inputs)
    return Fixture(case.name, case.component, case.adapter, inputs, expected, out_dtype=case.dtype, tol=case.tol)


def _same_inputs(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_inputs(a[k], b[k]) for k in a)
    return a == b


def _header(fx: Fixture) -> tuple:
    scalars = {k: v for k, v in fx.kwargs.items() if not isinstance(v, (torch.Tensor, dict))}
    return fx.component, fx.adapter, fx.out_dtype, fx.tol, scalars


def expected_drift(stored: Fixture, fresh: Fixture) -> float:
    """Max scaled error between two expected outputs (inf if their shapes differ)."""
    if stored.expected.shape != fresh.expected.shape:
        return float("inf")
    err = scaled_error(fresh.expected, stored.expected)
    return float(err.max()) if err.numel() else 0.0


def problems(case: Case) -> list[str]:
    """What is wrong with the case's stored file: [] if it is what the generator makes."""
    try:
        stored = load_fixture(case.name, case.directory)
    except FileNotFoundError:
        return [f"{case.name}: no file (run `uv run cs336 fixtures`)"]
    fresh = generate(case, stored.kwargs)
    found = []
    if _header(stored) != _header(fresh):
        found.append(f"{case.name}: metadata {_header(stored)} != {_header(fresh)} (run `uv run cs336 fixtures`)")
    if not _same_inputs(stored.kwargs, draw(case)):
        found.append(f"{case.name}: stored inputs differ from what seed {case.seed} draws "
                     f"(changed the case? run `uv run cs336 fixtures --redraw {case.name}`)")
    drift, bound = expected_drift(stored, fresh), DRIFT_FRACTION * case.tol
    if not drift <= bound:
        found.append(f"{case.name}: expected output moved by {drift:.2e} > {bound:.2e} "
                     f"({DRIFT_FRACTION:g} of the tolerance) when recomputed from the stored inputs")
    return found


def drifted(cases: list[Case] = CASES) -> list[str]:
    """Every problem with every case's stored file; [] when all are current."""
    return [p for case in cases for p in problems(case)]


def write_all(cases: list[Case] = CASES, redraw: set[str] = frozenset()) -> list[Path]:
    """Write each case whose file is missing, whose metadata changed, whose expected output
    moved by more than DRIFT_FRACTION of its tolerance, or that is named in `redraw`."""
    unknown = set(redraw) - {c.name for c in cases}
    if unknown:
        raise ValueError(f"--redraw names no case: {sorted(unknown)}")
    written = []
    for case in cases:
        try:
            stored = load_fixture(case.name, case.directory)
        except FileNotFoundError:
            stored = None
        if stored is None or case.name in redraw:
            written.append(save_fixture(generate(case), case.directory))
            continue
        fresh = generate(case, stored.kwargs)
        if _header(stored) != _header(fresh) or not expected_drift(stored, fresh) <= DRIFT_FRACTION * case.tol:
            written.append(save_fixture(fresh, case.directory))
    return written


def stale_files(cases: list[Case] = CASES) -> list[Path]:
    """Fixture files on disk that no case makes."""
    known = {(c.directory, c.name) for c in cases}
    return [
        p for d in (FIXTURES_DIR, HIDDEN_FIXTURES_DIR) if d.exists()
        for p in sorted(d.glob("*.safetensors")) if (d, p.stem) not in known
    ]
