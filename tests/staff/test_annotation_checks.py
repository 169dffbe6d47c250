"""`_checks.annotations(kernel, *args)`, the argument check a kernel's jaxtyping annotations state:
it accepts what every annotated kernel is given in the public suite, and rejects, naming the
argument, the expected and the given, each thing an annotation states."""

import pytest
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from cs336_basics.nn import _checks
from cs336_basics.nn import functional as F

from ..test_dtypes import _ROWS, KERNELS, inputs


@pytest.mark.parametrize("row", KERNELS)
def test_annotation_checks_accept_what_each_kernel_of_the_dtype_tests_is_given(row):
    kernel, _ = _ROWS.get(row, (row, {}))
    for dtype in (torch.float64, torch.bfloat16):
        _checks.annotations(getattr(F, kernel), *inputs(row, (2, 3, 8), dtype=dtype))


def norm_like(
    x: Float[Tensor, "... d_model"],
    alpha: Float[Tensor, " 1"],
    weight: Float[Tensor, " d_model"],
    bias: Float[Tensor, " d_model"] | None = None,
) -> Float[Tensor, "... d_model"]:
    """A kernel whose annotations state all its checks (DyT's: weight * tanh(alpha * x) + bias)."""


def lookup(ids: Int[Tensor, "*batch seq"], mask: Bool[Tensor, "seq seq"]) -> None:
    """A kernel of index and boolean tensors."""


X, ALPHA, W = torch.randn(2, 3, 4), torch.ones(1), torch.ones(4)


def test_annotation_checks_accept_any_leading_dimensions_and_an_absent_optional_argument():
    _checks.annotations(norm_like, X, ALPHA, W, torch.zeros(4))
    _checks.annotations(norm_like, X[0, 0], ALPHA, W, None)
    _checks.annotations(norm_like, X, ALPHA, W)
    _checks.annotations(lookup, torch.zeros(5, 3, dtype=torch.int64), torch.ones(3, 3, dtype=torch.bool))


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((X, torch.ones(2), W), ValueError, r"alpha must have shape \(1,\), got \(2,\)"),
        ((X, ALPHA, torch.ones(5)), ValueError, r"weight must have d_model=4 as x has, got shape \(5,\)"),
        ((X, ALPHA, W, torch.ones(3)), ValueError, r"bias must have d_model=4 as x has, got shape \(3,\)"),
        ((torch.tensor(1.0), ALPHA, W), ValueError, r"x must have shape \(\.\.\., d_model\), got \(\)"),
        ((X.long(), ALPHA, W), TypeError, r"x must have a floating dtype .*got torch\.int64"),
        ((X, ALPHA, None), TypeError, r"weight must be a torch\.Tensor, got NoneType"),
        (([1.0], ALPHA, W), TypeError, r"x must be a torch\.Tensor, got list"),
    ],
    ids=["fixed_size", "named_size", "optional_named_size", "rank", "kind", "none_not_allowed", "not_a_tensor"],
)
def test_annotation_checks_reject_what_the_annotations_rule_out(args, error, message, without_jaxtyping):
    with pytest.raises(error, match=message):
        _checks.annotations(norm_like, *args)


def test_annotation_checks_reject_index_and_boolean_tensors_of_another_kind(without_jaxtyping):
    ids, mask = torch.zeros(5, 3, dtype=torch.int64), torch.ones(3, 3, dtype=torch.bool)
    with pytest.raises(TypeError, match="ids must be an integer tensor"):
        _checks.annotations(lookup, ids.float(), mask)
    with pytest.raises(TypeError, match="mask must be a torch.bool tensor, got torch.int64"):
        _checks.annotations(lookup, ids, mask.long())
    with pytest.raises(ValueError, match=r"mask must have seq=3 as ids has, got shape \(3, 4\)"):
        _checks.annotations(lookup, ids, torch.ones(3, 4, dtype=torch.bool))
