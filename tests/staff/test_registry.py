"""The case registry against things that are not our code: every case's stored expected output
is what PyTorch's built-in kernels give, within the case's tolerance. Its layout: a component's
cases in one area module (that every component has cases: test_adding_a_component.py)."""

import itertools
from collections import Counter

import pytest
import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import AREAS, CASES, PUBLIC_CASES
from cs336_basics.testing import compare
from tests import adapters
from tests.oracles import builtin_kernels

# torch.softmax defines a fully masked row as NaN; this package defines it as zeros (README)
BUILTIN_DIFFERS_BY_DEFINITION = {
    "softmax_fully_masked_row",
    "softmax_backward_masked",
    "softmax_backward_dim0_fully_masked",
    "softmax_backward_middle_dim",
}  # attention's oracle zeroes such rows itself


@pytest.mark.parametrize("case", CASES, ids=[f"{c.component}-{c.name}" for c in CASES])
def test_registry_case_expected_output_agrees_with_pytorch_builtins(case):
    if case.name in BUILTIN_DIFFERS_BY_DEFINITION:
        pytest.skip("the built-in defines this input's output otherwise")
    fx = load_fixture(case.name, case.directory)
    with torch.no_grad(), builtin_kernels():
        actual = getattr(adapters, fx.adapter)(**fx.kwargs)
    result = compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype)
    assert result.ok, f"{case.name}: {result.message}"


def test_registry_keeps_each_component_s_cases_together_in_one_area_module():
    """In its module a component's cases form one run, public cases first; modules follow COMPONENTS."""
    runs = [(area.__name__, comp) for area in AREAS for comp, _ in itertools.groupby(c.component for c in area.CASES)]
    assert [comp for _, comp in runs] == list(COMPONENTS), runs
    for area in AREAS:
        for comp in {c.component for c in area.CASES}:
            hidden = [c.hidden for c in area.CASES if c.component == comp]
            assert hidden == sorted(hidden), f"{area.__name__}: a public {comp} case after a hidden one"
    assert list(dict.fromkeys(c.component for c in PUBLIC_CASES)) == list(COMPONENTS)


def test_registry_gives_every_case_a_seed_of_its_own():
    """Two cases drawn from one seed share their inputs' randomness: a witness of one is not a
    fresh draw for the other."""
    seeds = Counter(c.seed for c in CASES)
    assert {s: n for s, n in seeds.items() if n > 1} == {}
