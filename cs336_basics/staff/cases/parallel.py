"""Tensor parallelism: the builders of its inputs (the single-process builders of the FFN, attention
and the model, on world_size ranks), then its cases and what they grade of the public tests, then
its mistakes (cs336_basics/nn/parallel). Patched in the parent process, the mistakes reach the
ranks: the launcher forks them (spawn re-imports and would not see a patch; Linux forks)."""

from functools import partial

import torch

from cs336_basics.nn import functional as F
from cs336_basics.nn.parallel import ParallelSwiGLUFFN, RowParallelLinear, comm, sharding
from cs336_basics.nn.parallel import column as parallel_column
from cs336_basics.nn.parallel import row as parallel_row
from cs336_basics.staff.cases.case import BF16, EXACT_INT64, F64, B, Case
from cs336_basics.staff.cases.draw import Make, Rng, edited, linear_weight, randn
from cs336_basics.staff.cases.ffn import swiglu_case
from cs336_basics.staff.cases.mha import mha_case
from cs336_basics.staff.cases.model import lm_case
from cs336_basics.staff.mistakes import mistake


def parallel_column_case(
    batch: tuple[int, ...], d_in: int, d_out: int, world_size: int, gather_output: bool = True
) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, world_size=world_size, weights=linear_weight(rng, d_out, d_in),
        in_features=randn(rng, *batch, d_in), gather_output=gather_output,
    )  # fmt: skip


def parallel_row_case(batch: tuple[int, ...], d_in: int, d_out: int, world_size: int) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, world_size=world_size, weights=linear_weight(rng, d_out, d_in),
        in_features=randn(rng, *batch, d_in),
    )  # fmt: skip


def parallel_ffn_case(batch: tuple[int, ...], d_model: int, d_ff: int, world_size: int, x_std: float = 1.0) -> Make:
    swiglu = swiglu_case(batch, d_model, d_ff, x_std)
    return lambda rng: {"world_size": world_size, **swiglu(rng)}


def parallel_attention_case(batch: tuple[int, ...], seq: int, d_model: int, num_heads: int, num_kv_heads: int,
                            world_size: int, theta: float = 10000.0, positions: str = "none") -> Make:  # fmt: skip
    """mha_case's RoPE attention (run_multihead_self_attention_with_rope's arguments) on world_size ranks."""
    mha = mha_case(batch, seq, d_model, num_heads, num_kv_heads, theta, max_seq_len=2 * seq, positions=positions)
    return lambda rng: {"world_size": world_size, **mha(rng)}


def parallel_lm_case(batch: int, seq: int, vocab_size: int, context_length: int, d_model: int, num_layers: int,
                     num_heads: int, d_ff: int, world_size: int, **options) -> Make:  # fmt: skip
    """lm_case's model (run_transformer_lm's arguments, lm_case's options) on world_size ranks."""
    lm = lm_case(batch, seq, vocab_size, context_length, d_model, num_layers, num_heads, d_ff, **options)
    return lambda rng: {"world_size": world_size, **lm(rng)}


def with_grad_output(make: Make, d_out_key: str) -> Make:
    """A backward case: `make`'s inputs and a gradient of the output, ~ N(0, 1), shaped as the
    output (in_features' leading dimensions, then the size under d_out_key or its weight's rows)."""

    def make_backward(rng: Rng) -> dict:
        kw = make(rng)
        d_out = kw[d_out_key] if isinstance(kw[d_out_key], int) else kw[d_out_key].shape[0]
        return dict(kw, grad_output=randn(rng, *kw["in_features"].shape[:-1], d_out))

    return make_backward


column_parallel_linear = partial(Case, component="parallel", adapter="run_column_parallel_linear")
row_parallel_linear = partial(Case, component="parallel", adapter="run_row_parallel_linear")
parallel_swiglu = partial(Case, component="parallel", adapter="run_parallel_swiglu")
row_backward = partial(Case, component="parallel", adapter="run_row_parallel_linear_backward")
column_backward = partial(Case, component="parallel", adapter="run_column_parallel_linear_backward")
swiglu_backward = partial(Case, component="parallel", adapter="run_parallel_swiglu_backward")
swiglu_collectives = partial(Case, component="parallel", adapter="run_parallel_swiglu_collectives")
attention_backward = partial(Case, component="parallel", adapter="run_parallel_attention_backward")


def _no_gather_key(kw: dict) -> None:
    del kw["gather_output"]  # run_column_parallel_linear_backward always gathers


parallel_attention = partial(Case, component="parallel", adapter="run_parallel_attention")
parallel_lm = partial(Case, component="parallel", adapter="run_parallel_transformer_lm")

CASES = [
    # tensor parallelism at world size 2 (each case starts a group of processes). witness: square
    # weights, so a shard taken along the wrong axis still loads and gives a wrong output
    column_parallel_linear("parallel_column", seed=60, make=parallel_column_case(B, 64, 64, 2), floor=6.2e-7),
    column_parallel_linear(
        "parallel_column_sharded",
        seed=61,
        make=parallel_column_case((3, 5), 32, 48, 2, gather_output=False),
        floor=4.5e-7,
    ),
    row_parallel_linear("parallel_row", seed=62, make=parallel_row_case(B, 64, 64, 2), floor=5.5e-7),
    parallel_swiglu("parallel_ffn", seed=63, make=parallel_ffn_case(B, 64, 128, 2), floor=1.4e-6),
    # GeGLU on 2 ranks: each rank's gate uses the layer's activation
    parallel_swiglu(
        "parallel_ffn_geglu",
        seed=214,
        make=edited(parallel_ffn_case((3, 4), 32, 64, 2), lambda kw: kw.update(activation="gelu")),
        floor=8.6e-7,
    ),
    parallel_swiglu(
        "parallel_ffn_w1_f64",
        seed=137,
        make=parallel_ffn_case((6,), 32, 64, 1),
        # the grader's single-process judge of fresh draws (grader/fresh.py) computes this case's
        # output 1.3e-16 away from the rank's: the floor keeps that under 1/100 of the tolerance
        floor=1.3e-15,
        dtype=F64,
    ),
    row_parallel_linear(
        "parallel_row_4d_bf16", seed=138, make=parallel_row_case((2, 2, 3), 32, 48, 2), floor=6.6e-3, dtype=BF16
    ),
    # the backward pass: x's gradient (f all-reduces it in backward, g passes it through, the
    # scatter's backward gathers it) and every weight's, gathered from the shards
    swiglu_backward(
        "parallel_ffn_backward",
        seed=188,
        make=with_grad_output(parallel_ffn_case((3, 4), 32, 64, 2), "d_model"),
        floor=1.4e-6,
    ),
    row_backward(
        "parallel_row_backward_f64",
        seed=189,
        make=with_grad_output(parallel_row_case((5,), 24, 16, 2), "d_out"),
        floor=1.4e-16,
        dtype=F64,
    ),
    # the gathered output's backward keeps this rank's slice of the gradient
    column_backward(
        "parallel_column_backward",
        seed=202,
        make=with_grad_output(edited(parallel_column_case((3, 2), 24, 32, 2), _no_gather_key), "d_out"),
        floor=2.2e-7,
    ),
    # Megatron's count: one all-reduce in forward (g), in backward one per column-parallel layer
    # (f before w1 and before w3), nothing else
    swiglu_collectives(
        "parallel_ffn_collectives",
        seed=190,
        make=with_grad_output(parallel_ffn_case((4,), 16, 32, 2), "d_model"),
        **EXACT_INT64,
    ),
    # attention split by head (GQA: each rank holds 2 query heads and the kv head they share), RoPE
    # at positions that are not 0, 1, ...
    parallel_attention(
        "parallel_heads_gqa",
        seed=197,
        make=parallel_attention_case((2,), 8, 32, 4, 2, 2, positions="random"),
        floor=3.2e-6,
    ),
    # one sequence (1-D positions, out of order), no GQA, another theta and max_seq_len
    parallel_attention(
        "parallel_heads_one_sequence",
        seed=209,
        make=parallel_attention_case((), 6, 16, 4, 4, 2, theta=500.0, positions="random"),
        floor=6.3e-7,
    ),
    # the split attention's backward: f all-reduces x's gradient over the ranks' heads (floor:
    # the built-in's, on MKL's compatible path)
    attention_backward(
        "parallel_heads_backward",
        seed=223,
        make=with_grad_output(parallel_attention_case((2,), 6, 32, 4, 2, 2), "d_model"),
        floor=5.1e-6,
    ),
    # the language model split over the ranks: its layers built from ParallelAttention and
    # ParallelSwiGLUFFN, sharing one RoPE (positions not 0, 1, ...), tied embeddings, the norms' eps;
    # then left padding masked, in bfloat16, one layer, another theta
    parallel_lm(
        "parallel_model_gqa_tied_eps",
        seed=198,
        make=parallel_lm_case(2, 7, 50, 16, 32, 2, 4, 48, 2, num_kv_heads=2, tie=True, eps=0.25, positions="random"),
        floor=1.6e-6,
    ),
    parallel_lm(
        "parallel_model_padded_eps_bf16",
        seed=200,
        make=parallel_lm_case(
            2, 8, 40, 24, 32, 1, 8, 64, 2, rope_theta=500.0, num_kv_heads=4, eps=0.5, positions="random", padding=True
        ),
        floor=2.3e-2,
        dtype=BF16,
    ),
    # hidden: 4 ranks, odd batch shapes and a 1-D input; 1 rank (no collective at all); bfloat16
    column_parallel_linear(
        "parallel_column_w4", hidden=True, seed=1201, make=parallel_column_case((5,), 7, 12, 4), floor=9.8e-8
    ),
    row_parallel_linear(
        "parallel_row_1d_w4", hidden=True, seed=1202, make=parallel_row_case((), 36, 5, 4), floor=5.1e-8
    ),
    row_parallel_linear(
        "parallel_row_w1", hidden=True, seed=1203, make=parallel_row_case((2, 3), 20, 12, 1), floor=1.4e-7
    ),
    parallel_swiglu(
        "parallel_ffn_w4_4d", hidden=True, seed=1204, make=parallel_ffn_case((2, 3, 4), 20, 40, 4), floor=5.3e-7
    ),
    parallel_swiglu(
        "parallel_ffn_tanh_gate_w4",
        hidden=True,
        seed=1208,
        make=edited(parallel_ffn_case((5,), 16, 48, 4), lambda kw: kw.update(activation="gelu_tanh")),
        floor=5.1e-7,  # the largest over the CPU paths, MKL_CBWR=COMPATIBLE's included
    ),
    parallel_swiglu(
        "parallel_ffn_bf16", hidden=True, seed=1205, make=parallel_ffn_case((4, 6), 24, 64, 2), floor=1.1e-2, dtype=BF16
    ),
    swiglu_backward(
        "parallel_ffn_backward_w4",
        hidden=True,
        seed=1187,
        make=with_grad_output(parallel_ffn_case((2, 3), 16, 32, 4), "d_model"),
        floor=7.9e-7,
    ),
    swiglu_collectives(
        "parallel_ffn_collectives_w4",
        hidden=True,
        seed=1184,
        make=with_grad_output(parallel_ffn_case((2, 3), 16, 32, 4), "d_model"),
        **EXACT_INT64,
    ),
    parallel_attention(
        "parallel_heads_w4", hidden=True, seed=1198, make=parallel_attention_case((), 6, 64, 8, 4, 4), floor=1.1e-6
    ),
    attention_backward(
        "parallel_heads_backward_f64",
        hidden=True,
        seed=1212,
        make=with_grad_output(parallel_attention_case((), 5, 32, 8, 4, 2, theta=500.0), "d_model"),
        floor=4.4e-15,
        dtype=F64,
    ),
    # the model on 2 ranks only: 4 ranks of it outgrow the worker's share of a 768 MB container
    parallel_lm(
        "parallel_model_three_layers",
        hidden=True,
        seed=1199,
        make=parallel_lm_case(1, 6, 40, 8, 32, 3, 4, 32, 2),
        floor=1.6e-6,
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "parallel": {
        "test_parallel_heads_split_equals_one_process": (
            "parallel_heads_gqa",
            "parallel_heads_w4",
            "parallel_model_gqa_tied_eps",
            "parallel_heads_backward",
            "parallel_heads_backward_f64",
        ),
        "test_parallel_matches_fixture": ("parallel_column", "parallel_column_sharded", "parallel_row", "parallel_ffn"),
        "test_parallel_output_equals_single_process": ("parallel_ffn_w1_f64", "parallel_ffn_w4_4d"),
        "test_parallel_input_grad_equals_single_process": ("parallel_ffn_backward", "parallel_row_backward_f64"),
        "test_parallel_weight_grads_gathered_equal_single_process": (
            "parallel_ffn_backward",
            "parallel_ffn_backward_w4",
        ),
        "test_parallel_ffn_forward_issues_exactly_one_all_reduce": ("parallel_ffn_collectives",),
        "test_parallel_collectives_per_pass_are_megatrons": ("parallel_ffn_collectives", "parallel_ffn_collectives_w4"),
        "test_parallel_column_rank_holds_its_slice_of_output_rows": ("parallel_column_sharded",),
        "test_parallel_row_rank_holds_its_slice_of_input_columns": ("parallel_row", "parallel_row_1d_w4"),
        "test_parallel_ffn_plan_follows_meta_llama": ("parallel_ffn", "parallel_ffn_w4_4d"),
        "test_parallel_column_shard_has_d_out_over_w_output_rows": ("parallel_column", "parallel_column_sharded"),
        "test_parallel_column_rank_keeps_its_slice_of_output_rows": ("parallel_column_sharded", "parallel_column"),
        "test_parallel_column_forward_equals_the_unsharded_layer": ("parallel_column", "parallel_column_sharded"),
        "test_parallel_column_backward_all_reduces_the_input_grad": (
            "parallel_ffn_backward",
            "parallel_ffn_backward_w4",
        ),
        "test_parallel_column_weight_grad_is_its_slice_of_the_unsharded_grad": ("parallel_ffn_backward",),
        "test_parallel_column_issues_megatrons_collectives": ("parallel_ffn_collectives",),
        "test_parallel_row_shard_has_d_in_over_w_input_columns": ("parallel_row", "parallel_row_1d_w4"),
        "test_parallel_row_rank_keeps_its_slice_of_input_columns": ("parallel_row", "parallel_row_1d_w4"),
        "test_parallel_row_forward_all_reduces_the_partial_products": ("parallel_row", "parallel_row_4d_bf16"),
        "test_parallel_row_backward_passes_the_gradient_through_g_unchanged": (
            "parallel_row_backward_f64",
            "parallel_ffn_backward",
        ),
        "test_parallel_row_weight_grad_is_its_slice_of_the_unsharded_grad": ("parallel_row_backward_f64",),
        "test_parallel_row_issues_megatrons_collectives": ("parallel_ffn_collectives",),
        "test_parallel_ffn_forward_equals_the_unsharded_ffn": ("parallel_ffn", "parallel_ffn_w4_4d"),
        "test_parallel_ffn_input_grad_equals_the_unsharded_ffn": ("parallel_ffn_backward", "parallel_ffn_backward_w4"),
        "test_parallel_ffn_weight_grads_are_slices_of_the_unsharded_ffn": (
            "parallel_ffn_backward",
            "parallel_ffn_backward_w4",
        ),
        "test_parallel_ffn_issues_one_all_reduce_forward_and_two_backward": (
            "parallel_ffn_collectives",
            "parallel_ffn_collectives_w4",
        ),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_parallel_shard_then_gather_round_trips": "the given sharding helpers (nn.parallel.sharding)",
    "test_parallel_indivisible_width_raises_naming_both_numbers": "the given argument checks of the parallel layers",
    "test_parallel_model_refuses_the_norm_and_ffn_ablations": "the given argument check of ParallelTransformerLM",
    "test_parallel_model_refuses_another_norm_type": "the given argument check of ParallelTransformerLM",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


_shard_state_dict = sharding.shard_state_dict  # the right one, kept before any patching


@mistake(
    "parallel-wrong_shard_axis",
    sharding,
    "shard_state_dict",
    raises=(ValueError,),  # a non-square weight's shard does not fit the layer
    diagnosis="weights sharded along the wrong axis (column-parallel split by input columns, row-parallel by "
    "output rows)",
)
def parallel_shard_along_wrong_axis(state_dict, plan, rank, world_size):
    # column-parallel weights split along d_in, row-parallel along d_out: Megatron's transposed
    flipped = {k: (None if d is None else 1 - d) for k, d in plan.items()}
    return _shard_state_dict(state_dict, flipped, rank, world_size)


@mistake(
    "parallel-gather_along_first_dim",
    comm,
    "_all_gather_last_dim",
    raises=(RuntimeError,),  # the scatter's backward gathers too: x's gradient comes back misshapen
    diagnosis="the column-parallel all-gather concatenating the ranks' outputs along the first dimension "
    "instead of the last (d_out)",
)
def parallel_gather_along_first_dim(x, group):
    parts = [torch.empty_like(x, memory_format=torch.contiguous_format) for _ in range(comm._group_size(group))]
    torch.distributed.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts, dim=0)


@mistake(
    "parallel-row_missing_all_reduce",
    RowParallelLinear,
    "forward",
    diagnosis="the row-parallel layer returning its own partial product x_r W_r^T, without the all-reduce (g) "
    "that sums the ranks' partial products",
)
def parallel_row_without_all_reduce(self, x):
    if not self.input_is_parallel:
        x = comm.scatter_to_parallel_region(x, self.group)
    return F.linear(x, self.weight)  # this rank's partial product, never summed


@mistake(
    "parallel-ffn_all_reduce_after_w1",
    ParallelSwiGLUFFN,
    "forward",
    diagnosis="the parallel FFN all-reducing W1 x before SiLU: each rank holds different hidden units, not "
    "partial sums of the same ones",
)
def parallel_ffn_all_reduce_after_w1(self, x):
    act = F.get_activation(self.activation)
    gate = comm.reduce_from_parallel_region(self.w1(x), self.w1.group)  # sums unit j of every rank
    return self.w2(act(gate) * self.w3(x))


# ---- seen only by the backward and collective-count cases


@mistake(
    "parallel-ffn_gather_before_product",
    ParallelSwiGLUFFN,
    "forward",
    diagnosis="the parallel FFN all-gathering W1 x and W3 x to the full d_ff before the product: right numbers, "
    "two all-gathers and a full-width product too many",
)
def parallel_ffn_gather_before_product(self, x):
    act = F.get_activation(self.activation)
    gate = comm.gather_from_parallel_region(self.w1(x), self.w1.group)  # (..., d_ff)
    up = comm.gather_from_parallel_region(self.w3(x), self.w3.group)  # (..., d_ff)
    return self.w2(comm.scatter_to_parallel_region(act(gate) * up, self.w2.group))  # right numbers, 3 collectives


class _CopyWithoutBackwardAllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # each rank keeps only its shard's share of the input gradient


@mistake(
    "parallel-f_backward_missing_all_reduce",
    parallel_column,
    "copy_to_parallel_region",
    diagnosis="f without the all-reduce in backward: each rank's input gradient is only its shard's share",
)
def parallel_f_without_backward_all_reduce(x, group=None):
    return x if comm._group_size(group) == 1 else _CopyWithoutBackwardAllReduce.apply(x, group)


class _ReduceAlsoInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm._all_reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return comm._all_reduce(grad, ctx.group), None  # grad is already replicated: W times too large


@mistake(
    "parallel-g_all_reduce_in_backward",
    parallel_row,
    "reduce_from_parallel_region",
    diagnosis="g all-reducing in backward too: every upstream gradient W times too large",
)
def parallel_g_all_reduce_in_backward(x, group=None):
    return x if comm._group_size(group) == 1 else _ReduceAlsoInBackward.apply(x, group)
