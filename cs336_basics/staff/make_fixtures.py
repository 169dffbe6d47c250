"""Regenerate the fixture files from fixed seeds: `uv run cs336 fixtures` (`--check` compares
instead of writing). Public fixtures go to fixtures/, hidden ones to hidden_fixtures/."""

from pathlib import Path

import torch

from cs336_basics.fixture_io import FIXTURES_DIR, Fixture, load_fixture, save_fixture
from cs336_basics.staff.fixture_cases import PUBLIC_CASES, REFERENCE, Case
from cs336_basics.staff.hidden_cases import HIDDEN_CASES, HIDDEN_FIXTURES_DIR

CASES = PUBLIC_CASES + HIDDEN_CASES



def directory_for(case: Case) -> Path:
    return HIDDEN_FIXTURES_DIR if case.hidden else FIXTURES_DIR


def _map_tensors(kwargs: dict, fn) -> dict:
    out = {}
    for key, value in kwargs.items():
        if isinstance(value, torch.Tensor):
            out[key] = fn(value)
        elif isinstance(value, dict):
            out[key] = {k: fn(v) for k, v in value.items()}
        else:
            out[key] = value
    return out


def generate(case: Case) -> Fixture:
    """The case's inputs, cast to its dtype, and the float64 reference output as float32."""
    g = torch.Generator().manual_seed(case.seed)
    kwargs = _map_tensors(case.make(g), lambda t: t.to(case.dtype) if t.is_floating_point() else t)
    upcast = _map_tensors(kwargs, lambda t: t.double() if t.is_floating_point() else t)
    with torch.no_grad():
        expected = REFERENCE[case.adapter](**upcast).to(torch.float32)
    return Fixture(case.name, case.component, case.adapter, kwargs, expected, out_dtype=case.dtype)


def write_all(cases: list[Case] = CASES) -> list[Path]:
    """Write every case whose file is missing or differs (safetensors orders its metadata
    differently on each save, so rewriting an unchanged file would only churn git)."""
    stale = set(drifted(cases))
    return [save_fixture(generate(c), directory_for(c)) for c in cases if c.name in stale]


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def drifted(cases: list[Case] = CASES) -> list[str]:
    """Names of the cases whose stored file differs from what `generate` makes now (or is missing)."""
    bad = []
    for case in cases:
        fresh = generate(case)
        try:
            stored = load_fixture(case.name, directory_for(case))
        except FileNotFoundError:
            bad.append(case.name)
            continue
        same = (
            stored.adapter == fresh.adapter
            and stored.component == fresh.component
            and stored.out_dtype == fresh.out_dtype
            and _same(stored.kwargs, fresh.kwargs)
            and _same(stored.expected, fresh.expected)
        )
        if not same:
            bad.append(case.name)
    return bad


def stale_files(cases: list[Case] = CASES) -> list[Path]:
    """Fixture files on disk that no case makes."""
    known = {(directory_for(c), c.name) for c in cases}
    return [
        p for d in (FIXTURES_DIR, HIDDEN_FIXTURES_DIR) if d.exists()
        for p in sorted(d.glob("*.safetensors")) if (d, p.stem) not in known
    ]
