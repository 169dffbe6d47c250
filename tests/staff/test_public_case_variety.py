"""The registry's rule for public cases: nothing a student's code could ignore is held still.

For each component, every argument of its adapters takes at least two distinct values across
the public cases (an implementation that hard-codes eps, ignores `activation`, reduces over a
fixed axis or only handles 3-D input then fails a public test, not only the hidden ones):

- a number, string or flag: two values (a left-out optional argument counts as a value);
- a tensor (or a dict of tensors, a model's weights): two (dtype, shape)s, and an argument whose
  annotation has leading `...` dimensions comes with two numbers of dimensions;
- the inputs' dtype: float32, bfloat16 and float64 wherever the component computes in floating
  point (DTYPES says where fewer, and why);
- witnesses the issue named: an attention mask with a query that may attend to nothing, and
  RoPE positions that are out of order (a packed batch need not be sorted).

Run with `uv run pytest tests/staff/test_public_case_variety.py`.
"""

import inspect

import pytest
import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import cases_of
from tests import adapters

F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64
FLOATS = frozenset({F32, BF16, F64})

# The dtypes each component's public cases must include; FLOATS unless said otherwise here.
DTYPES = {
    # bit-exact token ids: the float64 expected output decides the argmax, which bfloat16 rounding
    # can flip between two close logits, so a correct bfloat16 model need not give the same ids
    "generate": {F32, F64},
    # optimizer state: AdamW's moments and a resumed run's state are specified in the parameters'
    # dtype; a bfloat16 AdamW is a different algorithm (mixed-precision training keeps float32 masters)
    "adamw": {F32, F64},
    "checkpoint": {F32, F64},
    # the schedule is a function of integers, computed in float64 by definition
    "lr_schedule": {F64},
    # integer inputs and outputs only (the Case's dtype is unused)
    "get_batch": set(),
    "train_bpe": set(),
    "tokenizer": set(),
}
# Arguments whose every public value is the same, with the reason it is held still.
HELD_STILL = {
    # the reference run's own settings, not the student's: (path, file object) is varied by the
    # hidden cases; one value keeps the public checkpoint test at one AdamW resume
}


def value_of(value) -> object:
    """What counts as one value of an argument: itself for a number, string or flag; (dtype,
    shape) for a tensor; the same per entry for a dict or list."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, tuple(value.shape))
    if isinstance(value, dict):
        return tuple(sorted((k, value_of(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(value_of(v) for v in value)
    return value


NOT_GIVEN = "(not given)"


def arguments(component: str) -> dict[str, list]:
    """{argument: [its value in each public case whose adapter takes it]} over the component's
    public fixtures; an optional argument left out is NOT_GIVEN."""
    values: dict[str, list] = {}
    for case in cases_of(component, hidden=False):
        kwargs = load_fixture(case.name).kwargs
        for name in inspect.signature(getattr(adapters, case.adapter)).parameters:
            values.setdefault(name, []).append(kwargs.get(name, NOT_GIVEN))
    return values


def leading_dims_vary(component: str) -> dict[str, set[int]]:
    """{argument: its numbers of dimensions} for the tensor arguments annotated with leading
    `...` dimensions (jaxtyping, tests/adapters.py)."""
    ndims: dict[str, set[int]] = {}
    for case in cases_of(component, hidden=False):
        kwargs = load_fixture(case.name).kwargs
        for name, p in inspect.signature(getattr(adapters, case.adapter)).parameters.items():
            if "..." in str(p.annotation) and isinstance(kwargs.get(name), torch.Tensor):
                ndims.setdefault(name, set()).add(kwargs[name].ndim)
    return ndims


@pytest.mark.parametrize("component", COMPONENTS)
def test_public_cases_of_component_give_every_argument_two_values(component):
    held = {
        name: value_of(vals[0])
        for name, vals in arguments(component).items()
        if len({repr(value_of(v)) for v in vals}) < 2 and (component, name) not in HELD_STILL
    }
    assert held == {}, f"{component}: arguments with one value in every public case: {held}"


@pytest.mark.parametrize("component", COMPONENTS)
def test_public_cases_of_component_vary_the_number_of_leading_dimensions(component):
    fixed = {name: dims for name, dims in leading_dims_vary(component).items() if len(dims) < 2}
    assert fixed == {}, f"{component}: `...` arguments with one number of dimensions: {fixed}"


@pytest.mark.parametrize("component", COMPONENTS)
def test_public_cases_of_component_cover_its_dtypes(component):
    have = {case.dtype for case in cases_of(component, hidden=False)}
    assert DTYPES.get(component, FLOATS) <= have


def test_public_attention_case_masks_a_whole_query_row():
    masks = [load_fixture(c.name).kwargs.get("mask") for c in cases_of("attention", hidden=False)]
    assert any(m is not None and bool((~m).all(dim=-1).any()) for m in masks)


@pytest.mark.parametrize("component", ["rope", "mha"])
def test_public_cases_of_component_give_positions_out_of_order(component):
    positions = [load_fixture(c.name).kwargs.get("token_positions") for c in cases_of(component, hidden=False)]
    assert any(p is not None and bool((p.diff(dim=-1) < 0).any()) for p in positions)
