"""linear, rung by rung: the output shape for a weight of shape (d_out, d_in), any number of
leading dimensions, y = x W^T on numbers you can check by hand, and the bias (tests/_ladder.py)."""

import torch

from ._helpers import F64, raised
from ._ladder import climb_failed, rung
from .adapters import run_linear, run_linear_with_bias

W = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]  # (d_out, d_in) = (3, 2)
X = [1.0, 10.0]  # x W^T = [21, 43, 65]: small integers, exact in float64


def call(fn, *args, what: str, look_at: str) -> torch.Tensor:
    """fn(*args); an exception raised is this rung's failure, said in words."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"{what} raised {raised(e)}", look_at)


def check_shape(lead: tuple[int, ...], look_at: str) -> None:
    x = torch.ones(*lead, 2, dtype=F64)
    what = f"x of shape {(*lead, 2)} and weight of shape (d_out, d_in) = (3, 2)"
    out = call(run_linear, 2, 3, torch.tensor(W, dtype=F64), x, what=what, look_at=look_at)
    if not isinstance(out, torch.Tensor) or out.shape != (*lead, 3) or out.dtype != F64:
        got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
        climb_failed(f"{what} gave {got}, not {((*lead, 3), F64)}", look_at)


@rung(1)
def test_linear_maps_d_in_features_to_d_out():
    check_shape((2, 3), "y = x W^T: the weight is stored (d_out, d_in), as in torch.nn.Linear; return x's dtype")


@rung(2)
def test_linear_takes_any_number_of_leading_dimensions():
    for lead in ((6,), (2, 1, 3), ()):
        check_shape(lead, "y = x W^T over the last dimension of x, whatever the leading dimensions (x @ W.T)")


@rung(3)
def test_linear_is_x_times_the_weight_transposed():
    got = run_linear(2, 3, torch.tensor(W, dtype=F64), torch.tensor(X, dtype=F64)).tolist()
    if got != [21.0, 43.0, 65.0]:
        climb_failed(
            f"x = [1, 10] and weight [[1, 2], [3, 4], [5, 6]] gave {got}, not x W^T = [21, 43, 65]",
            "y = x W^T: output j is the dot product of x with row j of the weight, and nothing added",
        )


@rung(4)
def test_linear_adds_the_bias():
    bias = torch.tensor([100.0, 200.0, 300.0], dtype=F64)
    got = run_linear_with_bias(2, 3, torch.tensor(W, dtype=F64), bias, torch.tensor(X, dtype=F64)).tolist()
    if got != [121.0, 243.0, 365.0]:
        climb_failed(
            f"x = [1, 10], weight [[1, 2], [3, 4], [5, 6]] and bias [100, 200, 300] gave {got}, not "
            "x W^T + b = [121, 243, 365]",
            "add the bias given, once, to each output: x W^T + b",
        )
