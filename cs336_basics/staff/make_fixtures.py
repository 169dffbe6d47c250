"""Write and check the fixture files: `uv run cs336 fixtures` (`--check` compares instead of
writing; `--redraw NAME...` draws a case's inputs again). Public fixtures go to fixtures/,
hidden ones to hidden_fixtures/.

The stored inputs are the source of truth. They are drawn from the case's seed only when its
file is missing or on `--redraw`; otherwise the expected output is recomputed from the stored
inputs. So a machine whose float64 `exp` or summation order differs in the last bit never
rewrites an input, and rewrites an expected output only if it moved by more than HEADROOM x the
case's floor (see docs/fixtures.md).
"""

import functools
import mmap
from pathlib import Path

import numpy as np
import torch

from cs336_basics.fixture_io import FIXTURES_DIR, Fingerprint, Fixture, load_fixture, save_fixture
from cs336_basics.staff.cases import CASES, CONFUSERS, HEADROOM, HIDDEN_FIXTURES_DIR, MISTAKES, Case
from cs336_basics.staff.reference import adapters, expected_output, map_tensors
from cs336_basics.testing import MARGIN, SHOWS, fingerprint_matches, scaled_error

PROBES = 16  # elements per mistake fingerprint: where the wrong output is furthest from the right one


def draw(case: Case) -> dict:
    """The case's inputs from its seed, floating-point tensors cast to the case's dtype."""
    kwargs = case.make(np.random.default_rng(case.seed))
    return map_tensors(kwargs, lambda t: t.to(case.dtype) if t.is_floating_point() else t)


def mistake_output(case: Case, mistake, inputs: dict) -> torch.Tensor | None:
    """The mistake's output on the inputs, in the case's dtype; None if it raises what it declares,
    or, as a mistake of another component the case reaches (softmax's NaN in a sampled token's
    draw), anything: no output to fingerprint."""
    foreign = (Exception,) if mistake.component != case.component else ()
    caught = (*getattr(mistake, "raises", ()), *foreign)  # a confuser declares none
    with mistake.applied(), torch.no_grad():
        try:
            return getattr(adapters(), case.adapter)(**inputs)
        except caught:
            return None


def _spy(flags: mmap.mmap, i: int, fn):
    @functools.wraps(fn)
    def called(*args, **kwargs):
        flags[i] = 1
        return fn(*args, **kwargs)

    return called


def reached(case: Case, inputs: dict) -> set[tuple[int, str]]:
    """The (id(owner), attribute) of each function a mistake or confuser replaces that the reference
    calls on these inputs, here or in a forked process (the parallel ranks): a mistake in a function
    the case never reaches leaves its output as the reference's, so it need not be run."""
    wrong = (*MISTAKES, *CONFUSERS)
    targets = list({(id(m.owner), m.attribute): (m.owner, m.attribute) for m in wrong}.values())
    originals = [getattr(owner, attribute) for owner, attribute in targets]
    flags = mmap.mmap(-1, len(targets))  # anonymous and shared: forked children write to it too
    try:
        for i, ((owner, attribute), fn) in enumerate(zip(targets, originals, strict=True)):
            setattr(owner, attribute, _spy(flags, i, fn))
        with torch.no_grad():
            getattr(adapters(), case.adapter)(**inputs)
    finally:
        for (owner, attribute), fn in zip(targets, originals, strict=True):
            setattr(owner, attribute, fn)
    return {(id(owner), attribute) for i, (owner, attribute) in enumerate(targets) if flags[i]}


def wrong_outputs(case: Case, inputs: dict) -> dict[str, torch.Tensor]:
    """{name: output} of each mistake and confuser the case reaches on these inputs and that
    returns a tensor there; {} for a hidden case (it names no mistake). Each is run once: the
    fingerprints and the drift check share them."""
    if case.hidden:
        return {}
    calls = reached(case, inputs)
    reachable = [m for m in (*MISTAKES, *CONFUSERS) if (id(m.owner), m.attribute) in calls]
    outputs = {m.name: mistake_output(case, m, inputs) for m in reachable}
    return {name: out for name, out in outputs.items() if isinstance(out, torch.Tensor)}


def fingerprints(case: Case, outputs: dict[str, torch.Tensor], expected: torch.Tensor) -> dict[str, Fingerprint]:
    """For a public case, each catalogued mistake whose output (`wrong_outputs`: in the case's
    dtype) fails the case: its values at the PROBES elements where it is furthest from the
    expected output, or, if its output has another shape, that shape (an empty index). Hidden
    cases get none. A mistake that raises here is not fingerprinted. A fingerprint that another
    known wrong implementation (a mistake or a confuser) with another output also matches is not
    a name: it carries what the output shows (SHOWS + the mistake's `shows`), or is left out."""
    found = {}
    for mistake in MISTAKES:
        wrong = outputs.get(mistake.name)
        if wrong is None:
            continue
        fp = _fingerprint(case, mistake, wrong, expected)
        if fp is None:
            continue
        if _shared(fp, mistake.name, outputs, expected, case.tol):
            if not mistake.shows:
                continue
            fp = Fingerprint(SHOWS + mistake.shows, fp.index, fp.value)
        found[mistake.name] = fp
    return found


def _fingerprint(case: Case, mistake, wrong: torch.Tensor, expected: torch.Tensor) -> Fingerprint | None:
    """The mistake's fingerprint on this case (its shape, or its values where furthest from the
    expected output), None if its output passes the case."""
    if tuple(wrong.shape) != tuple(expected.shape):
        shape = torch.tensor(wrong.shape, dtype=torch.float64)
        return Fingerprint(mistake.diagnosis, torch.zeros(0, dtype=torch.int64), shape)
    err = scaled_error(wrong, expected).reshape(-1)
    if not bool((err > case.tol).any()):
        return None
    index = err.argsort(descending=True, stable=True)[: min(PROBES, err.numel())]
    return Fingerprint(mistake.diagnosis, index, wrong.detach().double().reshape(-1)[index])


def _shared(fp: Fingerprint, owner: str, outputs: dict, expected: torch.Tensor, tol: float) -> bool:
    """Whether another known wrong implementation's output reproduces the fingerprint (for a
    shape fingerprint, has that shape): then several bugs give what it probes, even bugs whose
    whole outputs are equal (a check that fails for more than one reason)."""
    for name, other in outputs.items():
        if name == owner:
            continue
        if fp.shape is not None:
            if tuple(other.shape) == fp.shape:
                return True
        elif tuple(other.shape) == tuple(expected.shape) and fingerprint_matches(fp, other, expected, tol):
            return True
    return False


def generate(case: Case, inputs: dict | None = None, outputs: dict[str, torch.Tensor] | None = None) -> Fixture:
    """The case's fixture: `inputs` (default: drawn from the seed), their float64 expected
    output and the fingerprints of the mistakes that fail it (`outputs`: their wrong_outputs on
    these inputs, if already computed)."""
    inputs = draw(case) if inputs is None else inputs
    outputs = wrong_outputs(case, inputs) if outputs is None else outputs
    expected = expected_output(case.adapter, inputs)
    return Fixture(
        case.name,
        case.component,
        case.adapter,
        inputs,
        expected,
        out_dtype=case.output_dtype,
        tol=case.tol,
        mistakes=fingerprints(case, outputs, expected),
    )


def _same_inputs(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_inputs(a[k], b[k]) for k in a)
    return a == b


def _header(fx: Fixture) -> tuple:
    scalars = {k: v for k, v in fx.kwargs.items() if not isinstance(v, (torch.Tensor, dict))}
    return fx.component, fx.adapter, fx.out_dtype, fx.tol, scalars


def drift_bound(case: Case) -> float:
    """How far a recomputed expected output may move: HEADROOM x the case's floor, max(floor, unit
    roundoff) = tol / MARGIN. The reference recomputed on another CPU is one more correct
    implementation, and the floor is the largest error a correct implementation is measured to make
    over the matrix of code paths (tests/staff/code_paths.py); a CPU outside it may exceed that by
    HEADROOM. A float64 case's floor is a few ulps, the least a change of summation order can move it by."""
    return HEADROOM * case.tol / MARGIN[case.dtype]


def expected_drift(stored: Fixture, fresh: Fixture) -> float:
    """Max scaled error between two expected outputs (inf if their shapes differ)."""
    if stored.expected.shape != fresh.expected.shape:
        return float("inf")
    err = scaled_error(fresh.expected, stored.expected)
    return float(err.max()) if err.numel() else 0.0


def _fails_marginally(case: Case, mistake, stored: Fixture) -> bool:
    """Whether the mistake's max scaled error on the stored inputs is within drift_bound of the
    tolerance: it may fail the case on one CPU and pass it on another, so its name may come or go."""
    wrong = mistake_output(case, mistake, stored.kwargs)
    if wrong is None or tuple(wrong.shape) != tuple(stored.expected.shape):
        return False
    err = float(scaled_error(wrong, stored.expected).max())
    return abs(err - case.tol) <= drift_bound(case)


def fingerprint_drift(case: Case, stored: Fixture, fresh: Fixture, outputs: dict[str, torch.Tensor]) -> float:
    """Max scaled error (on the expected output's scale) between each stored fingerprint and the
    mistake's output recomputed at the same indices; inf if other mistakes fail the case now,
    unless each that came or went fails it marginally (_fails_marginally). Mistake outputs are
    computed in the case's dtype, so another CPU may round them otherwise: they are allowed the
    case's tolerance, the precision that naming a mistake works to. `outputs`: the mistakes'
    wrong_outputs on the stored inputs (fresh was made from them)."""
    by_name = {m.name: m for m in MISTAKES}
    came_or_went = stored.mistakes.keys() ^ fresh.mistakes.keys()
    if not all(name in by_name and _fails_marginally(case, by_name[name], stored) for name in came_or_went):
        return float("inf")
    both = stored.mistakes.keys() & fresh.mistakes.keys()
    if any(stored.mistakes[name].diagnosis != fresh.mistakes[name].diagnosis for name in both):
        return float("inf")  # a name that became what the output shows, or a reworded diagnosis
    worst = 0.0
    for name in sorted(both):
        fp = stored.mistakes[name]
        if fp.shape is not None:
            if fp.shape != fresh.mistakes[name].shape:
                return float("inf")
            continue
        wrong = outputs[name].detach().double().reshape(-1)[fp.index]
        err = scaled_error(wrong, fp.value) if fp.value.numel() else torch.zeros(0)
        worst = max([worst, *err.tolist()])
    return worst


def problems(case: Case) -> list[str]:
    """What is wrong with the case's stored file: [] if it is what the generator makes."""
    try:
        stored = load_fixture(case.name, case.directory)
    except FileNotFoundError:
        return [f"{case.name}: no file (run `uv run cs336 fixtures`)"]
    outputs = wrong_outputs(case, stored.kwargs)
    fresh = generate(case, stored.kwargs, outputs)
    found = []
    if _header(stored) != _header(fresh):
        found.append(f"{case.name}: metadata {_header(stored)} != {_header(fresh)} (run `uv run cs336 fixtures`)")
    if not _same_inputs(stored.kwargs, draw(case)):
        found.append(
            f"{case.name}: stored inputs differ from what seed {case.seed} draws "
            f"(changed the case? run `uv run cs336 fixtures --redraw {case.name}`)"
        )
    drift, bound = expected_drift(stored, fresh), drift_bound(case)
    if not drift <= bound:
        found.append(
            f"{case.name}: expected output moved by {drift:.2e} > {bound:.2e} "
            f"(HEADROOM {HEADROOM:g} x the case's floor) when recomputed from the stored inputs"
        )
    moved = fingerprint_drift(case, stored, fresh, outputs)
    if not moved <= case.tol:
        found.append(
            f"{case.name}: mistake fingerprints {sorted(stored.mistakes)} -> {sorted(fresh.mistakes)}, "
            f"values moved by {moved:.2e} (tolerance {case.tol:.2e})"
        )
    return found


def drifted(cases: list[Case] = CASES) -> list[str]:
    """Every problem with every case's stored file; [] when all are current."""
    return [p for case in cases for p in problems(case)]


def write_all(cases: list[Case] = CASES, redraw: set[str] = frozenset()) -> list[Path]:
    """Write each case whose file is missing, whose metadata changed, whose expected output
    moved by more than HEADROOM x its floor (drift_bound), or that is named in `redraw`."""
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
        outputs = wrong_outputs(case, stored.kwargs)
        fresh = generate(case, stored.kwargs, outputs)
        if (
            _header(stored) != _header(fresh)
            or not expected_drift(stored, fresh) <= drift_bound(case)
            or not fingerprint_drift(case, stored, fresh, outputs) <= case.tol
        ):
            written.append(save_fixture(fresh, case.directory))
    return written


def stale_files(cases: list[Case] = CASES) -> list[Path]:
    """Fixture files on disk that no case makes."""
    known = {(c.directory, c.name) for c in cases}
    return [
        p
        for d in (FIXTURES_DIR, HIDDEN_FIXTURES_DIR)
        if d.exists()
        for p in sorted(d.glob("*.safetensors"))
        if (d, p.stem) not in known
    ]
