"""The snapshot tests, run against a catalogue of plausible wrong implementations.

Each mistake replaces one kernel of `cs336_basics.nn.functional` (or one module method) with a
wrong version written here, then every public fixture case is run through the adapters with
the tolerance stored in its fixture. A mistake is caught when a case fails the way the mistake
says it should: a wrong output (the comparison fails), or the exception it names (a transposed
weight cannot multiply a non-square input). Any other exception is a bug in the catalogue and
is raised. The accepted variants are correct implementations written differently; they must
pass every case, which shows the tolerances are not tighter than the arithmetic allows.
"""

import random
from pathlib import Path

import pytest
import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import FIXTURES_DIR, fixture_names, load_fixture
from cs336_basics.nn.parallel.launch import START_METHOD_ENV
from cs336_basics.staff.cases import HIDDEN_CASES, MISTAKES, PUBLIC_CASES, VARIANTS
from cs336_basics.staff.grader.fresh import ATTEMPTS, first_kept_draw, fresh_fixture
from cs336_basics.testing import SHOWS, compare, likely_mistakes

from .. import adapters

pytestmark = pytest.mark.slow  # second tier: every catalogued mistake against every case

FIXTURES = {c.name: load_fixture(c.name) for c in PUBLIC_CASES}


@pytest.fixture(autouse=True)
def _ranks_inherit_the_patch(monkeypatch):
    """A mistake is patched into this process; the tensor-parallel ranks see it only if they are
    forked from it (the launcher picks a forkserver when this process has other threads)."""
    monkeypatch.setenv(START_METHOD_ENV, "fork")


WRONG_OUTPUT = "wrong output"


def kept_draw(stored, seed: int):
    """The first draw of seeds seed, seed + 1, ... that the grader keeps (grader/fresh.py)."""
    return next(filter(None, (fresh_fixture(stored, s) for s in range(seed, seed + ATTEMPTS))), None)


def failures(expect: tuple[type[BaseException], ...] = (), first_for: str | None = None) -> dict[str, str]:
    """{case: how it failed} over the public cases whose snapshot check fails with the code as it
    is now: WRONG_OUTPUT, or the name of an exception of a type in `expect` (others propagate).
    With `first_for=component`, that component's cases run first and the search stops at the
    first failure (enough to show a mistake is caught, and fast)."""
    failed = {}
    order = sorted(FIXTURES, key=lambda case: (FIXTURES[case].component != first_for, case))
    for case in order:
        fx = FIXTURES[case]
        try:
            with torch.no_grad():
                actual = getattr(adapters, fx.adapter)(**fx.kwargs)
            if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
                failed[case] = WRONG_OUTPUT
        except expect as e:
            failed[case] = type(e).__name__
        if failed and first_for is not None:
            break
    return failed


def test_catalogue_covers_every_public_fixture_and_the_reference_passes_them_all():
    assert sorted(FIXTURES) == sorted(p.stem for p in Path(FIXTURES_DIR).glob("*.safetensors"))
    assert sorted(FIXTURES) == sorted(n for c in COMPONENTS for n in fixture_names(c))
    assert failures() == {}


def first_failure_names(mistake) -> list[str] | None:
    """What the first failing snapshot test of the mistake's component (in the order pytest runs
    them) names as the likely mistakes; None if that test fails with an exception."""
    for case in fixture_names(mistake.component):
        fx = FIXTURES[case]
        try:
            with torch.no_grad():
                actual = getattr(adapters, fx.adapter)(**fx.kwargs)
        except mistake.raises:
            return None
        if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
            return likely_mistakes(actual, fx)
    return []


# Mistakes whose every failing case raises before an output exists: nothing to name by value.
# (parallel-wrong_shard_axis: a shard along the wrong axis has the transposed shape even for a
# square weight, so loading it raises a ValueError naming both shapes.)
RAISES_ONLY = {
    "linear-crash_on_2d_or_4d_input",
    "parallel-wrong_shard_axis",
    "tokenizer-decode_raises_on_split_character",
}


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_catalogue_mistake_fails_a_snapshot_test(mistake):
    with mistake.applied():
        assert failures(mistake.raises, first_for=mistake.component), f"no snapshot test catches {mistake.name}"


@pytest.mark.parametrize(
    "mistake",
    [m for m in MISTAKES if m.name not in RAISES_ONLY],
    ids=[m.name for m in MISTAKES if m.name not in RAISES_ONLY],
)
def test_catalogue_mistake_is_named_by_its_component_s_first_failing_snapshot_test(mistake):
    with mistake.applied():
        named = first_failure_names(mistake)
    said = {mistake.diagnosis} | ({SHOWS + mistake.shows} if mistake.shows else set())
    assert named is not None and said & set(named), f"{mistake.name}: the first failure names {named}"


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_catalogue_mistake_fails_the_grader_s_fresh_draw_of_a_case_it_fails(mistake):
    # one verdict: the grader judges public cases on fresh draws (grader/fresh.py); a mistake
    # that fails a public test must cost points there too, not only on the shipped inputs
    with mistake.applied():
        case = next(iter(failures(mistake.raises, first_for=mistake.component)))
    fresh = kept_draw(FIXTURES[case], 20261122)  # the reference's output, outside the patch
    assert fresh is not None
    with mistake.applied(), torch.no_grad():
        try:
            actual = getattr(adapters, fresh.adapter)(**fresh.kwargs)
        except mistake.raises:
            return
    assert not compare(actual, fresh.expected, fresh.tol, out_dtype=fresh.out_dtype).ok, (
        f"{mistake.name} passes {case}'s fresh draw"
    )


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_catalogue_correct_variant_passes_every_snapshot_test(variant):
    with variant.applied():
        assert failures() == {}


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_catalogue_correct_variant_passes_every_hidden_case(variant):
    """A correct implementation written differently keeps full marks: the hidden cases accept it too."""
    hidden = [load_fixture(c.name, c.directory) for c in HIDDEN_CASES if c.component == variant.component]
    failed = []
    with variant.applied(), torch.no_grad():
        for fx in hidden:
            actual = getattr(adapters, fx.adapter)(**fx.kwargs)
            if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
                failed.append(fx.name)
    assert failed == []


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_catalogue_correct_variant_passes_the_grader_s_fresh_draws(variant):
    """The grader judges public cases on fresh draws: a correct implementation written otherwise
    keeps full marks there, draw after draw, not only on the shipped inputs."""
    rng = random.Random(20261129)
    drawn = [first_kept_draw(FIXTURES[c.name], rng) for c in PUBLIC_CASES if c.component == variant.component]
    failed = []
    with variant.applied(), torch.no_grad():
        for fx in [d for d in drawn if d is not None]:
            actual = getattr(adapters, fx.adapter)(**fx.kwargs)
            if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
                failed.append(fx.name)
    assert failed == [] and None not in drawn


def test_catalogue_names_nothing_for_the_reference_or_a_correct_variant():
    outputs = {name: getattr(adapters, fx.adapter)(**fx.kwargs) for name, fx in FIXTURES.items()}
    assert {
        name: likely_mistakes(out, FIXTURES[name])
        for name, out in outputs.items()
        if likely_mistakes(out, FIXTURES[name])
    } == {}


def named_first_by_component() -> dict[str, tuple[int, int]]:
    """{component: (mistakes its first failing snapshot test names, mistakes)}: what a student
    running `pytest -k <component>` with one of the catalogued mistakes is told first."""
    counts: dict[str, tuple[int, int]] = {}
    for patch in MISTAKES:
        with patch.applied():
            first = first_failure_names(patch)
        named, total = counts.get(patch.component, (0, 0))
        told = bool(first and ({patch.diagnosis, SHOWS + patch.shows} & set(first)))
        counts[patch.component] = (named + told, total + 1)
        if not told:
            print(f"not named first: {patch.name} ({'an exception' if first is None else first})")
    return counts


if __name__ == "__main__":
    # uv run python -m tests.staff.test_mistake_catalogue [--cases]: the share of catalogued
    # mistakes their component's first failing snapshot test names, per component; with --cases,
    # also which public cases catch each mistake and variant (every case per mistake: slow)
    import sys

    if "--cases" in sys.argv:
        for patch in MISTAKES + VARIANTS:
            with patch.applied():
                caught = failures(getattr(patch, "raises", ()))
            kind = "mistake" if patch in MISTAKES else "variant"
            listing = ", ".join(f"{c} ({how})" for c, how in caught.items())
            print(f"{kind:8s} {patch.name:44s} fails {len(caught):2d}: {listing}")
    counts = named_first_by_component()
    for component, (named, total) in counts.items():
        print(f"{component:18s} named first {named:3d} of {total:3d} ({100 * named / total:5.1f}%)")
    named, total = (sum(n for n, _ in counts.values()), sum(t for _, t in counts.values()))
    print(f"{'overall':18s} named first {named:3d} of {total:3d} ({100 * named / total:5.1f}%)")
