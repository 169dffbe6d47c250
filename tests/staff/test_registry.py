"""The case registry against things that are not our code: every case's stored expected output
is what PyTorch's built-in kernels give, within the case's tolerance; and the graded
components are the package's components."""

import pytest
import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES
from cs336_basics.staff.grader.config import load_config
from cs336_basics.testing import compare
from tests import adapters
from tests.oracles import builtin_kernels

# torch.softmax defines a fully masked row as NaN; this package defines it as zeros (README)
BUILTIN_DIFFERS_BY_DEFINITION = {"softmax_fully_masked_row"}  # attention's oracle zeroes such rows itself


@pytest.mark.parametrize("case", CASES, ids=[f"{c.component}-{c.name}" for c in CASES])
def test_registry_case_expected_output_agrees_with_pytorch_builtins(case):
    if case.name in BUILTIN_DIFFERS_BY_DEFINITION:
        pytest.skip("the built-in defines this input's output otherwise")
    fx = load_fixture(case.name, case.directory)
    with torch.no_grad(), builtin_kernels():
        actual = getattr(adapters, fx.adapter)(**fx.kwargs)
    result = compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype)
    assert result.ok, f"{case.name}: {result.message}"


def test_registry_graded_components_are_the_package_components():
    config = load_config()
    assert tuple(config.components) == COMPONENTS
    assert set(config.points) == set(COMPONENTS)
