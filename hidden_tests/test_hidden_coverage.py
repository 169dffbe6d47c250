"""The hidden suite covers every component, with shapes the public fixtures do not have."""

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.fixture_cases import PUBLIC_CASES
from cs336_basics.staff.hidden_cases import COMPONENTS, HIDDEN_CASES, TOLERANCES, cases_by_component
from cs336_basics.staff.make_fixtures import HIDDEN_FIXTURES_DIR, directory_for


def shapes(case) -> tuple:
    """(name, shape) of every tensor input and of the output, as stored in the fixture file."""
    fx = load_fixture(case.name, directory_for(case))
    tensors = {"expected": fx.expected}
    for arg, value in fx.kwargs.items():
        if isinstance(value, dict):
            tensors.update({f"{arg}/{key}": t for key, t in value.items()})
        elif isinstance(value, torch.Tensor):
            tensors[arg] = value
    return tuple(sorted((name, tuple(t.shape)) for name, t in tensors.items()))


def test_every_component_has_at_least_two_hidden_cases():
    counts = {comp: len(cases["hidden"]) for comp, cases in cases_by_component().items()}
    assert set(counts) == set(COMPONENTS)
    assert {comp: n for comp, n in counts.items() if n < 2} == {}


def test_every_component_has_a_hidden_case_with_shapes_no_public_case_has():
    lacking = []
    for comp, cases in cases_by_component().items():
        public = {shapes(c) for c in cases["public"]}
        if not any(shapes(c) not in public for c in cases["hidden"]):
            lacking.append(comp)
    assert lacking == []


def test_every_hidden_case_has_a_tolerance_and_a_file():
    assert set(TOLERANCES) == {c.name for c in HIDDEN_CASES}
    assert all(c.hidden for c in HIDDEN_CASES)
    missing = [c.name for c in HIDDEN_CASES if not (HIDDEN_FIXTURES_DIR / f"{c.name}.safetensors").exists()]
    assert missing == []


def test_hidden_names_and_seeds_are_unique_and_apart_from_public():
    names = [c.name for c in PUBLIC_CASES + HIDDEN_CASES]
    assert len(names) == len(set(names))
    seeds = [c.seed for c in HIDDEN_CASES]
    assert len(seeds) == len(set(seeds)) and min(seeds) >= 1000 > max(c.seed for c in PUBLIC_CASES)


def test_hidden_case_names_mention_no_other_component():
    # `pytest -k <component>` must select only that component's hidden tests
    clashes = [
        (c.name, other) for c in HIDDEN_CASES for other in COMPONENTS
        if other != c.component and other not in c.component and other in c.name
    ]
    assert clashes == []
