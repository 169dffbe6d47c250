"""The hidden suite covers every component, with shapes the public fixtures do not have."""

import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES, HIDDEN_CASES, PUBLIC_CASES, cases_of


def shapes(case) -> tuple:
    """(name, shape) of every tensor input and of the output, as stored in the fixture file."""
    fx = load_fixture(case.name, case.directory)
    tensors = {"expected": fx.expected}
    for arg, value in fx.kwargs.items():
        if isinstance(value, dict):
            tensors.update({f"{arg}/{key}": t for key, t in value.items()})
        elif isinstance(value, torch.Tensor):
            tensors[arg] = value
    return tuple(sorted((name, tuple(t.shape)) for name, t in tensors.items()))


def test_every_component_has_a_public_case_and_two_hidden_cases():
    counts = {comp: (len(cases_of(comp, hidden=False)), len(cases_of(comp, hidden=True))) for comp in COMPONENTS}
    assert {comp: n for comp, n in counts.items() if n[0] < 1 or n[1] < 2} == {}


def test_every_component_has_a_hidden_case_with_shapes_no_public_case_has():
    lacking = []
    for comp in COMPONENTS:
        public = {shapes(c) for c in cases_of(comp, hidden=False)}
        if not any(shapes(c) not in public for c in cases_of(comp, hidden=True)):
            lacking.append(comp)
    assert lacking == []


def test_case_names_and_seeds_are_unique_and_hidden_seeds_apart_from_public():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    seeds = [c.seed for c in CASES]
    assert len(seeds) == len(set(seeds)) and min(c.seed for c in HIDDEN_CASES) >= 1000 > max(
        c.seed for c in PUBLIC_CASES
    )


def test_case_names_mention_no_other_component():
    # `pytest -k <component>` must select only that component's tests
    clashes = [
        (c.name, other)
        for c in CASES
        for other in COMPONENTS
        if other != c.component and other not in c.component and other in c.name
    ]
    assert clashes == []
