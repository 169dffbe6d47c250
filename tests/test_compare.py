"""How outputs are compared with fixtures (cs336_basics/testing.py)."""

import torch

from cs336_basics.testing import compare, scaled_error

INF, NAN = float("inf"), float("nan")


def test_compare_identical_infs_and_nans_agree_with_zero_error():
    e = torch.tensor([1.0, INF, -INF, NAN])
    result = compare(e.clone(), e, tol=0.0)
    assert result.ok and result.max_abs_err == 0.0 and result.max_scaled_err == 0.0


def test_compare_an_inf_or_nan_where_the_fixture_has_another_value_is_an_infinite_error():
    e = torch.tensor([1.0, 2.0, INF])
    for wrong in ([NAN, 2.0, INF], [1.0, INF, INF], [1.0, 2.0, -INF]):
        result = compare(torch.tensor(wrong), e, tol=1e-3)
        assert not result.ok and result.max_scaled_err == INF and result.max_abs_err == INF
    assert scaled_error(torch.tensor([NAN]), torch.tensor([1.0])).item() == INF


def test_compare_checks_shape_before_dtype_before_values():
    e = torch.zeros(2, 3)
    assert "shape mismatch" in compare(torch.zeros(3, 2, dtype=torch.float16), e, 1e-3, out_dtype=torch.float32).message
    assert "dtype mismatch" in compare(torch.ones(2, 3, dtype=torch.float16), e, 1e-3, out_dtype=torch.float32).message


def test_compare_token_ids_as_ids_naming_the_step_where_they_diverge():
    expected = torch.tensor([5, 9, 2, 7, 7], dtype=torch.float64)  # fixtures store ids as float64
    assert compare(torch.tensor([5, 9, 2, 7, 7]), expected, tol=0.0, out_dtype=torch.int64).ok
    result = compare(torch.tensor([5, 9, 3, 7, 1]), expected, tol=0.0, out_dtype=torch.int64)
    assert not result.ok and "scaled error" not in result.message
    assert (
        "diverge at step 2 (2 of 5 ids differ)" in result.message
        and "got [3, 7, 1], expected [2, 7, 7]" in result.message
    )
    hidden = compare(torch.tensor([5, 9, 3, 7, 1]), expected, tol=0.0, out_dtype=torch.int64, reveal_values=False)
    assert "diverge at step 2" in hidden.message and "expected" not in hidden.message
