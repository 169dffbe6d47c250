import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import functional as F

from . import adapters
from ._helpers import assert_close, rand
from .floors import MaxErrors, tol


@pytest.mark.parametrize("case", fixture_names("softmax"))
def test_softmax_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


BUILTIN_SHAPES = {"1d": ((9,), 0), "2d-dim0": ((3, 5), 0), "2d-last": ((3, 5), -1), "4d-dim1": ((2, 3, 4, 5), 1),
                  "4d-last": ((2, 3, 4, 5), -1)}  # fmt: skip


def _ours_and_builtin(batch: tuple, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = rand(*batch, std=5.0, mean=3.0)
    return F.softmax(x, dim), TF.softmax(x, dim=dim)


@pytest.mark.parametrize("batch, dim", BUILTIN_SHAPES.values(), ids=BUILTIN_SHAPES)
def test_softmax_kernel_matches_torch_builtin(batch, dim):
    assert_close(*_ours_and_builtin(batch, dim), tol("softmax.f64"), "softmax vs F.softmax")


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of the comparison with the built-in above, on its inputs
    (`seeds` do not apply)."""
    return MaxErrors.of("softmax.f64", (_ours_and_builtin(batch, dim) for batch, dim in BUILTIN_SHAPES.values()))


def test_softmax_of_huge_logits_is_finite_and_sums_to_one():
    x = torch.tensor([[1e4, -1e4, 0.0], [1e4, 1e4, 1e4]])
    out = F.softmax(x, dim=-1)
    assert torch.isfinite(out).all()
    assert torch.allclose(out, torch.tensor([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]))


def test_softmax_row_with_one_unmasked_entry_puts_all_mass_there():
    inf = float("inf")
    out = F.softmax(torch.tensor([[-inf, 2.5, -inf, -inf]]), dim=-1)
    assert_close(out, torch.tensor([[0.0, 1.0, 0.0, 0.0]]), 0.0, "out vs torch.tensor([[0.0, 1.0, 0.0, 0.0]])")


def test_softmax_fully_masked_row_returns_zeros():
    """Our definition (torch.softmax gives NaN there): a row with nothing to attend to gets no mass."""
    inf = float("inf")
    out = F.softmax(torch.tensor([[-inf, -inf, -inf], [0.0, 0.0, -inf]]), dim=-1)
    assert_close(
        out,
        torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]),
        0.0,
        "out vs torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]])",
    )
