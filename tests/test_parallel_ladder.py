"""Tensor parallelism, rung by rung, piece by piece in the handout's order (ColumnParallelLinear,
RowParallelLinear, then the FFN built from them; tests/conftest.py runs the parallel tests in that
order): the shard's shape, which block of the full weight a rank holds, the forward against the
unsharded layer, the input's gradient (Megatron's f and g in backward), the weight's gradient,
then the collectives each pass issues (tests/_ladder.py).

Shapes and blocks need no process group (a layer built with world_size and rank given). The rest
comes from ONE launch of two ranks (float64, the inputs of tests/_parallel.py), kept for the
session while the parallel code is unchanged; each rank records its results stage by stage, so an
error in one layer's backward fails only the rungs that read it. Against the unsharded
computation on the full weights (plain torch) the tolerance is tests/floors.py's "parallel.f64"
(measured against the single-process Linear and SwiGLUFFN, which compute the same products)."""

import functools

import torch

from cs336_basics.nn import convert
from cs336_basics.nn.parallel import ColumnParallelLinear, ParallelSwiGLUFFN, RowParallelLinear, sharding
from cs336_basics.nn.parallel.collectives import counting_collectives
from cs336_basics.nn.parallel.launch import launch
from cs336_basics.testing import scaled_error

from . import _parallel as P
from ._ladder import climb_failed, rung
from .floors import tol

W, F64 = 2, torch.float64
TOL = tol("parallel.f64")
D_IN, D_OUT = 16, 24
no_process_left_behind = P.no_process_left_behind  # autouse: every test here


# ---- without processes: shapes and blocks -------------------------------------------------------


def shard_shapes(cls, d_in: int, d_out: int, **kw) -> list[tuple]:
    return [tuple(cls(d_in, d_out, world_size=W, rank=r, dtype=F64, **kw).weight.shape) for r in range(W)]


def held_block(cls, full: torch.Tensor, rank: int):
    """(the weight the layer holds after loading rank `rank`'s shard of `full`, or None; what went wrong)."""
    layer = cls(full.shape[1], full.shape[0], world_size=W, rank=rank, dtype=F64)
    try:
        shard = sharding.shard_state_dict({"weight": full}, sharding.sharding_plan(layer), rank, W)
    except Exception as e:  # noqa: BLE001 -- reported as the rung's observation
        return None, f"shard_state_dict raised {type(e).__name__}: {e}"
    try:
        convert.load_state_dict(layer, shard)
    except Exception as e:  # noqa: BLE001
        return None, f"rank {rank}'s shard {tuple(shard['weight'].shape)} did not load into the layer's weight " + (
            f"{tuple(layer.weight.shape)} ({type(e).__name__})"
        )
    return layer.weight.detach(), ""


def check_block(cls, d_in: int, d_out: int, want_block, what: str, look_at: str) -> None:
    full = torch.arange(d_out * d_in, dtype=F64).reshape(d_out, d_in)  # entry (i, j) = d_in i + j
    for rank in range(W):
        held, error = held_block(cls, full, rank)
        want = want_block(full, rank)
        if held is None or not torch.equal(held, want):
            seen = error or f"rank {rank} holds a {tuple(held.shape)} block starting with {held.flatten()[:3].tolist()}"
            climb_failed(
                f"full weight ({d_out}, {d_in}) with entry (i, j) = {d_in} i + j, W = {W}: {seen}; want {what} "
                f"{tuple(want.shape)}, starting with {want.flatten()[:3].tolist()}",
                look_at,
            )


@rung(1)
def test_parallel_column_shard_has_d_out_over_w_output_rows():
    shapes = shard_shapes(ColumnParallelLinear, D_IN, D_OUT)
    if shapes != [(D_OUT // W, D_IN)] * W:
        climb_failed(
            f"ColumnParallelLinear(d_in={D_IN}, d_out={D_OUT}) with W = {W}: weight shapes by rank {shapes}",
            f"the weight is (d_out / W, d_in) = ({D_OUT // W}, {D_IN}): rank r holds output rows of W (d_out, d_in)",
        )


@rung(2)
def test_parallel_column_rank_keeps_its_slice_of_output_rows():
    check_block(
        ColumnParallelLinear,
        D_IN,
        D_OUT,
        lambda full, r: full[r * D_OUT // W : (r + 1) * D_OUT // W],
        "rows [r d_out / W, (r + 1) d_out / W)",
        "ColumnParallelLinear.shard_dim (0: the output rows) and the weight's shape; sharding.shard_state_dict",
    )


# ---- one launch of W ranks: every layer's output, gradients and collectives --------------------

STAGES = ("build", "load", "forward", "backward")


def staged_case(kind: str, rank: int, world_size: int) -> dict:
    """P.run_case in stages, on this rank's shard: {"y", "dx", "dw", "forward", "backward"} as far
    as it got, and {"error": (stage, message)} where it stopped."""
    out, stage = {}, "build"
    try:
        module = P.parallel_module(kind, dtype=F64)
        case = P.inputs(kind)
        stage = "load"
        shard = sharding.shard_state_dict(case["weights"], sharding.sharding_plan(module), rank, world_size)
        convert.load_state_dict(module, shard)
        stage = "forward"
        x = case["x"]
        x = (P._slice(x, rank, world_size) if kind == "row_parallel_input" else x).clone().requires_grad_()
        dy = P._slice(case["dy"], rank, world_size) if kind == "column_sharded" else case["dy"]
        with counting_collectives() as counts:
            y = module(x)
        out.update(y=y.detach(), forward=dict(counts))
        stage = "backward"
        with counting_collectives() as counts:
            (y * dy).sum().backward()
        out.update(dx=x.grad, dw={k: p.grad for k, p in module.named_parameters()}, backward=dict(counts))
    except Exception as e:  # noqa: BLE001 -- the rungs that need this stage report it
        out["error"] = (stage, f"{type(e).__name__}: {e}")
    return out


def rank_results(rank: int, world_size: int) -> dict:
    return {kind: staged_case(kind, rank, world_size) for kind in P.KINDS}


def code_key() -> tuple:
    """Changes when any function of the parallel code is replaced (the course staff's checks patch
    them one at a time); a student's code is the same all session, so the launch runs once."""
    from cs336_basics.nn import functional
    from cs336_basics.nn.parallel import column, comm, row, sharded, swiglu

    owners = (column, comm, row, sharded, swiglu, sharding, functional)
    owners += (ColumnParallelLinear, RowParallelLinear, ParallelSwiGLUFFN)
    return tuple(id(v) for owner in owners for v in vars(owner).values())


@functools.cache
def launched(key: tuple) -> tuple[list[dict] | None, str]:
    try:
        return launch(rank_results, W), ""
    except Exception as e:  # noqa: BLE001
        return None, f"the launch of {W} ranks raised {type(e).__name__}: {e}"


def per_rank(kind: str, field: str, look_at: str) -> list:
    """Each rank's `field` of `kind`; the rung fails if the launch or that stage raised."""
    results, error = launched(code_key())
    if results is None:
        climb_failed(error, look_at)
    need = "forward" if field in ("y", "forward") else "backward"
    for rank, r in enumerate(results):
        stage, message = r[kind].get("error", (None, ""))
        if stage is not None and STAGES.index(stage) <= STAGES.index(need):
            climb_failed(f"{kind}, W = {W}: rank {rank} raised in {stage}: {message}", look_at)
    return [r[kind][field] for r in results]


def mismatch(got: torch.Tensor, want: torch.Tensor, others: dict[str, torch.Tensor]) -> str:
    """'' when got equals want to the floor; else what got is: its shape, its error, or which of
    `others` it equals."""
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)}, want {tuple(want.shape)}"
    same = [name for name, t in others.items() if float(scaled_error(got, t).max()) <= TOL]
    err = float(scaled_error(got, want).max())
    if err <= TOL:
        return ""
    return f"max scaled error {err:.3g} against the unsharded computation" + (f"; it equals {same[0]}" if same else "")


def block(t: torch.Tensor, rank: int, dim: int) -> torch.Tensor:
    n = t.shape[dim] // W
    return t.narrow(dim, rank * n, n)


def check_ranks(kind: str, field: str, wants: list, others: list[dict], what: str, look_at: str) -> None:
    """Fail at the first rank r whose `field` ("y", "dx", or "dw.<parameter name>") differs from
    wants[r]; others[r]: {what it would be if wrong in a known way: value}, for the message."""
    field, _, key = field.partition(".")
    for rank, got in enumerate(per_rank(kind, field, look_at)):
        if key and key not in got:
            climb_failed(f"{kind}, W = {W}: rank {rank}'s parameters are {sorted(got)}, no {key!r}", look_at)
        seen = mismatch(got[key] if key else got, wants[rank], others[rank])
        if seen:
            climb_failed(f"{kind}, W = {W}: rank {rank}'s {what}: {seen}", look_at)


def check_collectives(kinds: tuple[str, ...], look_at: str) -> None:
    for kind in kinds:
        want = P.MEGATRON_COLLECTIVES[kind]
        for rank, got in enumerate(zip(*(per_rank(kind, p, look_at) for p in ("forward", "backward")), strict=True)):
            if got != want:
                climb_failed(
                    f"{kind}, W = {W}: rank {rank} issued {got[0] or 'nothing'} in forward and "
                    f"{got[1] or 'nothing'} in backward; Megatron's: {want[0] or 'nothing'}, {want[1] or 'nothing'}",
                    look_at,
                )


@functools.cache
def single(kind: str) -> dict:
    """Output and gradients of the unsharded computation in plain torch (x W^T; the FFN
    (SiLU(x W1^T) * x W3^T) W2^T), so that the ladder does not lean on your Linear or SwiGLUFFN."""
    case = P.inputs(kind)
    x = case["x"].clone().requires_grad_()
    ws = {k: v.clone().requires_grad_() for k, v in case["weights"].items()}
    if kind == "ffn":
        hidden = torch.nn.functional.silu(x @ ws["w1.weight"].T) * (x @ ws["w3.weight"].T)
        y = hidden @ ws["w2.weight"].T
    else:
        y = x @ ws["weight"].T
    (y * case["dy"]).sum().backward()
    return {"y": y.detach(), "dx": x.grad, "dw": {k: w.grad for k, w in ws.items()}}


def x_dy_w(kind: str) -> tuple:
    case = P.inputs(kind)
    return case["x"], case["dy"], case["weights"]["weight"]


# ---- ColumnParallelLinear ----------------------------------------------------------------------


@rung(3)
def test_parallel_column_forward_equals_the_unsharded_layer():
    for kind in ("column_gathered", "column_sharded"):
        y = single(kind)["y"]
        check_ranks(
            kind,
            "y",
            [y if kind == "column_gathered" else block(y, r, -1) for r in range(W)],
            [{}] * W,
            "output" + ("" if kind == "column_gathered" else " (its block of the last dim)"),
            "y = x W_r^T is rank r's block of the output's last dim (d_out / W); gather_output=True all-gathers "
            "the blocks along the last dim, in rank order (gather_from_parallel_region)",
        )


@rung(4)
def test_parallel_column_backward_all_reduces_the_input_grad():
    where = {  # the sharded output runs f alone; the gathered one also the gather, checked second
        "column_sharded": "f (copy_to_parallel_region): identity in forward, all-reduce (sum) of the input's "
        "gradient in backward",
        "column_gathered": "the gather (gather_from_parallel_region): its backward gives each rank its own slice of "
        "the output's gradient (f's backward passed with the output left sharded)",
    }
    for kind in ("column_sharded", "column_gathered"):
        x, dy, w = x_dy_w(kind)
        dx = single(kind)["dx"]
        check_ranks(
            kind,
            "dx",
            [dx] * W,
            [
                {f"rank {r}'s own share dy_r W_r (the full dx is their sum)": block(dy, r, -1) @ block(w, r, 0)}
                for r in range(W)
            ],
            "input gradient",
            where[kind],
        )


@rung(5)
def test_parallel_column_weight_grad_is_its_slice_of_the_unsharded_grad():
    for kind in ("column_gathered", "column_sharded"):
        dw = single(kind)["dw"]["weight"]
        check_ranks(
            kind,
            "dw.weight",
            [block(dw, r, 0) for r in range(W)],
            [{f"{W} x that block": W * block(dw, r, 0)} for r in range(W)],
            "weight gradient",
            "rank r's weight gradient is its rows [r d_out / W, (r + 1) d_out / W) of the full dy^T x: the upstream "
            "gradient reaching y_r is dy's block r, as it is",
        )


@rung(6)
def test_parallel_column_issues_megatrons_collectives():
    check_collectives(
        ("column_gathered", "column_sharded"),
        "f: nothing in forward, one all-reduce in backward; the gather (gather_output=True): one all-gather in "
        "forward, a split (no collective) in backward",
    )


# ---- RowParallelLinear -------------------------------------------------------------------------


@rung(7)
def test_parallel_row_shard_has_d_in_over_w_input_columns():
    shapes = shard_shapes(RowParallelLinear, D_OUT, D_IN)
    if shapes != [(D_IN, D_OUT // W)] * W:
        climb_failed(
            f"RowParallelLinear(d_in={D_OUT}, d_out={D_IN}) with W = {W}: weight shapes by rank {shapes}",
            f"the weight is (d_out, d_in / W) = ({D_IN}, {D_OUT // W}): rank r holds input columns of W (d_out, d_in)",
        )


@rung(8)
def test_parallel_row_rank_keeps_its_slice_of_input_columns():
    check_block(
        RowParallelLinear,
        D_OUT,
        D_IN,
        lambda full, r: full[:, r * D_OUT // W : (r + 1) * D_OUT // W],
        "columns [r d_in / W, (r + 1) d_in / W)",
        "RowParallelLinear.shard_dim (1: the input columns) and the weight's shape; sharding.shard_state_dict",
    )


def partial_product(kind: str, rank: int) -> torch.Tensor:
    x, _, w = x_dy_w(kind)
    return block(x, rank, -1) @ block(w, rank, 1).T


@rung(9)
def test_parallel_row_forward_all_reduces_the_partial_products():
    for kind in ("row_parallel_input", "row_full_input"):
        y = single(kind)["y"]
        check_ranks(
            kind,
            "y",
            [y] * W,
            [
                {f"rank {r}'s own partial product x_r W_r^T (the full y is their sum)": partial_product(kind, r)}
                for r in range(W)
            ],
            "output",
            "g (reduce_from_parallel_region): all-reduce (sum) of x_r W_r^T in forward, so every rank returns the "
            "full (..., d_out); input_is_parallel=False first keeps x's block r of the last dim",
        )


@rung(10)
def test_parallel_row_backward_passes_the_gradient_through_g_unchanged():
    for kind in ("row_parallel_input", "row_full_input"):
        dx = single(kind)["dx"]
        want = [block(dx, r, -1) if kind == "row_parallel_input" else dx for r in range(W)]
        check_ranks(
            kind,
            "dx",
            want,
            [{f"{W} x the unsharded one": W * want[r]} for r in range(W)],
            "input gradient" + (" (its block of the last dim)" if kind == "row_parallel_input" else ""),
            "g's backward is the identity (the upstream gradient is already the same on every rank); with "
            "input_is_parallel=False, the split's backward all-gathers the blocks of dx along the last dim",
        )


@rung(11)
def test_parallel_row_weight_grad_is_its_slice_of_the_unsharded_grad():
    for kind in ("row_parallel_input", "row_full_input"):
        dw = single(kind)["dw"]["weight"]
        check_ranks(
            kind,
            "dw.weight",
            [block(dw, r, 1) for r in range(W)],
            [{f"{W} x that block": W * block(dw, r, 1)} for r in range(W)],
            "weight gradient",
            "rank r's weight gradient is its columns [r d_in / W, (r + 1) d_in / W) of the full dy^T x: g passes dy "
            "through unchanged in backward",
        )


@rung(12)
def test_parallel_row_issues_megatrons_collectives():
    check_collectives(
        ("row_parallel_input", "row_full_input"),
        "g: one all-reduce in forward, nothing in backward; the split (input_is_parallel=False): nothing in "
        "forward, one all-gather in backward",
    )


# ---- ParallelSwiGLUFFN -------------------------------------------------------------------------

FFN_BLOCKS = {"w1.weight": 0, "w2.weight": 1, "w3.weight": 0}  # Meta's llama: w1, w3 by rows; w2 by columns


@rung(13)
def test_parallel_ffn_forward_equals_the_unsharded_ffn():
    y = single("ffn")["y"]
    check_ranks(
        "ffn",
        "y",
        [y] * W,
        [{}] * W,
        "output",
        "w1, w3 column-parallel with gather_output=False (rank r's hidden units: SiLU(W1_r x) * W3_r x needs no "
        "communication), w2 row-parallel with input_is_parallel=True (one all-reduce, in w2)",
    )


@rung(14)
def test_parallel_ffn_input_grad_equals_the_unsharded_ffn():
    dx = single("ffn")["dx"]
    check_ranks(
        "ffn",
        "dx",
        [dx] * W,
        [{f"{W} x the unsharded one": W * dx}] * W,
        "input gradient",
        "f in w1 and in w3 all-reduces x's gradient in backward; g in w2 passes the upstream gradient unchanged",
    )


@rung(15)
def test_parallel_ffn_weight_grads_are_slices_of_the_unsharded_ffn():
    dws = single("ffn")["dw"]
    for key, dim in FFN_BLOCKS.items():
        check_ranks(
            "ffn",
            f"dw.{key}",
            [block(dws[key], r, dim) for r in range(W)],
            [{f"{W} x that block": W * block(dws[key], r, dim)} for r in range(W)],
            f"gradient of {key}",
            "rank r's gradients are its blocks of the full ones: w1, w3 rows, w2 columns [r d_ff / W, (r + 1) d_ff / W)",
        )


@rung(16)
def test_parallel_ffn_issues_one_all_reduce_forward_and_two_backward():
    check_collectives(
        ("ffn",),
        "forward: one all-reduce, w2's g (no gather of the hidden units); backward: one all-reduce per "
        "column-parallel layer (f in w1 and in w3)",
    )
