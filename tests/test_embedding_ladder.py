"""embedding, rung by rung: the output shape for ids of any shape, the rows of the table that the
ids name, and those rows copied exactly (tests/_ladder.py)."""

import torch

from ._helpers import F64, raised, rand
from ._ladder import climb_failed, rung
from .adapters import run_embedding

TABLE = [[10.0 * i, 10.0 * i + 1] for i in range(5)]  # row i is [10 i, 10 i + 1]: (vocab, d_model) = (5, 2)


def lookup(weight: torch.Tensor, ids, what: str, look_at: str) -> torch.Tensor:
    """run_embedding; an exception raised is this rung's failure, said in words."""
    try:
        return run_embedding(weight.shape[0], weight.shape[1], weight, torch.as_tensor(ids, dtype=torch.long))
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"{what} raised {raised(e)}", look_at)


@rung(1)
def test_embedding_returns_one_row_per_id():
    for shape in ((3,), (2, 3), (2, 1, 3)):
        ids = torch.arange(6).reshape(*shape) % 5 if len(shape) > 1 else torch.tensor([2, 0, 4])
        what = f"ids of shape {shape} and a table of shape (vocab, d_model) = (5, 2)"
        look_at = "one row of the table per id, in its dtype: the output's shape is ids.shape + (d_model,), for ids of any shape"
        out = lookup(torch.tensor(TABLE, dtype=F64), ids, what, look_at)
        if not isinstance(out, torch.Tensor) or out.shape != (*shape, 2) or out.dtype != F64:
            got = (tuple(out.shape), out.dtype) if isinstance(out, torch.Tensor) else type(out).__name__
            climb_failed(f"{what} gave {got}, not {((*shape, 2), F64)}", look_at)


@rung(2)
def test_embedding_returns_the_rows_the_ids_name():
    got = lookup(torch.tensor(TABLE, dtype=F64), [2, 0, 4], "ids [2, 0, 4]", "weight[token_ids]").tolist()
    if got != [TABLE[2], TABLE[0], TABLE[4]]:
        named = [next((i for i, row in enumerate(TABLE) if row == g), None) for g in got]
        climb_failed(
            f"ids [2, 0, 4] on a table whose row i is [10 i, 10 i + 1] gave {got}: rows {named}",
            "row token_ids[...] of the table, counting rows from 0: weight[token_ids]",
        )


@rung(3)
def test_embedding_copies_the_rows_exactly():
    weight = rand(5, 2, seed=3)  # float64 entries with all 53 bits in use
    got = lookup(weight, [2, 0, 4], "ids [2, 0, 4]", "weight[token_ids]")
    if not torch.equal(got, weight[[2, 0, 4]]):
        err = float((got - weight[[2, 0, 4]]).abs().max().detach())
        climb_failed(
            f"ids [2, 0, 4] on a float64 table gave rows off by up to {err:.3g} from rows [2, 0, 4] of the table: not exact copies",
            "a lookup copies the rows, in the table's dtype, without arithmetic: weight[token_ids]",
        )
