"""The case registry: every graded fixture case, public and hidden, declared once.

A case names its component, the adapter that computes it (tests/adapters.py, whose float64
run on the stored inputs is the expected output), the seed and builder of its inputs, the
dtype they are given in, and the measured error floor its tolerance comes from:
tol = testing.tolerance(floor, dtype), or 0 for an exact case. The generator
(make_fixtures.py) writes the tolerance into the fixture file; tests, `cs336 status` and the
grader read it from there.

Floors: the larger max scaled error, against the stored expected output, of the reference
adapter and of the same adapter on PyTorch's built-in kernels, both run in the case's dtype
(`uv run python -m tests.staff.measure_floors`), rounded up.

Hidden cases (seeds 1000+) are for grading and never ship to students: other shapes (odd
sizes, 1-D and 4-D), d_ff not a multiple of 64, bfloat16, and edge values. Case names never
contain another component's name, so `pytest -k <component>` selects only its own.
"""

from dataclasses import dataclass

import torch

from cs336_basics import COMPONENTS
from cs336_basics.corpus import EOT
from cs336_basics.fixture_io import FIXTURES_DIR
from cs336_basics.staff.bpe_builders import tokenizer_case, train_bpe_case
from cs336_basics.staff.builders import (
    Make,
    adamw_case,
    attention_case,
    block_case,
    checkpoint_case,
    cross_entropy_case,
    edited,
    embedding_case,
    ffn_block_case,
    generate_case,
    get_batch_case,
    get_batch_generator_case,
    gradient_clipping_case,
    layernorm_case,
    linear_bias_case,
    linear_case,
    lm_case,
    lr_schedule_case,
    mha_case,
    parallel_column_case,
    parallel_ffn_case,
    parallel_row_case,
    pointwise_case,
    positionwise_case,
    rmsnorm_case,
    rope_case,
    sampling_case,
    softmax_case,
    swiglu_case,
)
from cs336_basics.staff.reference import expected_output
from cs336_basics.testing import tolerance

F32, BF16, F16, F64 = torch.float32, torch.bfloat16, torch.float16, torch.float64
HIDDEN_FIXTURES_DIR = FIXTURES_DIR.parent / "hidden_fixtures"  # never shipped to students
I64 = torch.int64
EXACT = None  # the floor of a case whose every correct answer is bit-exact (a row copy): tol = 0


@dataclass(frozen=True)
class Case:
    name: str
    component: str
    adapter: str  # the run_* function of tests/adapters.py
    seed: int
    make: Make  # rng -> the adapter's keyword arguments, float32
    floor: float | None  # measured; EXACT (None) for tolerance 0
    dtype: torch.dtype = F32  # the inputs' (and, unless out_dtype says otherwise, the output's) dtype
    hidden: bool = False
    out_dtype: torch.dtype | None = None  # the output's dtype when it is not `dtype` (token ids: int64)

    @property
    def output_dtype(self) -> torch.dtype:
        return self.dtype if self.out_dtype is None else self.out_dtype

    @property
    def tol(self) -> float:
        return 0.0 if self.floor is EXACT else tolerance(self.floor, self.dtype)

    @property
    def directory(self):
        return HIDDEN_FIXTURES_DIR if self.hidden else FIXTURES_DIR


def hidden(*args, **kwargs) -> Case:
    return Case(*args, hidden=True, **kwargs)


B = (4, 12)  # CS336's (batch, sequence) for its snapshot tests
BIG = 1e4  # a logit or pre-activation far outside exp's float16/bfloat16 range
PAIRS = (0.0, -0.0, 40.0, -40.0, 88.0, -88.0, BIG, -BIG)  # exact zeros and large magnitudes
MODERATE_PAIRS = PAIRS[:6]


# ---- witnesses written into hidden inputs ----
def _repeat_ids(kw: dict) -> None:  # ids 0 and vocab-1 already first; repeat them and one more id
    kw["token_ids"][2:6] = torch.tensor([5, 5, 0, kw["vocab_size"] - 1])


def _zero_row_and_spike(kw: dict) -> None:
    kw["in_features"][0] = 0.0  # RMS 0: output 0 (eps > 0), not NaN
    kw["in_features"][1, 3] = 1e6  # one entry dominates: it maps to ~sqrt(d_model) * g, the rest to ~0


def _constant_row(kw: dict) -> None:
    # variance 0: the output is the bias. 2.75 is dyadic, so every float32 partial sum of the row
    # is exact and the mean is exactly 2.75 in any summation order (with 3.7 a 1-ulp error in the
    # mean, times 1/sqrt(eps), shows as a 1.2e-4 scaled error: a rounding, not a mistake).
    kw["in_features"][0] = 2.75


def _fully_masked_row(kw: dict) -> None:
    kw["in_features"][2] = float("-inf")


def _eos_is_the_third_token(kw: dict) -> None:
    # the id generation chooses third: it must stop right after it (and yield it)
    kw["eos_token_id"] = int(expected_output("run_generate", kw)[2])


def _uniform_and_one_hot_rows(kw: dict) -> None:
    kw["in_features"][0] = 7.0  # equal logits: uniform 1/n
    kw["in_features"][1, 4] = 1e4  # one huge logit: one-hot, no overflow


PUBLIC_CASES = [
    # witness: a square weight, so multiplying by W instead of W^T gives a wrong output (which can be
    # named), not a shape error; linear_4d's weight is not square
    Case("linear", "linear", "run_linear", 1, linear_case(B, 64, 64), floor=4.5e-7),
    Case("linear_4d", "linear", "run_linear", 2, linear_case((2, 3, 5), 48, 24, x_std=3.0), floor=2.9e-7),
    Case("embedding", "embedding", "run_embedding", 3, embedding_case(B, 100, 64), floor=EXACT),
    Case("silu", "silu", "run_silu", 4, pointwise_case(B + (64,), std=3.0), floor=9.1e-8),
    Case("silu_bf16", "silu", "run_silu", 5, pointwise_case(B + (64,), std=3.0), floor=2.4e-3, dtype=BF16),
    # witness: exp(-x) overflows for x << 0 and exp(x) for x >> 0; the output must stay finite. Half the
    # entries are random, so that fresh draws at grading time differ from the stored ones
    Case(
        "silu_extremes",
        "silu",
        "run_silu",
        24,
        pointwise_case((16,), std=3.0, extremes=(-BIG, -100.0, -20.0, -0.0, 1e-30, 20.0, 100.0, BIG)),
        floor=1.1e-10,
    ),
    Case(
        "silu_extremes_fp16",
        "silu",
        "run_silu",
        25,
        pointwise_case((16,), std=3.0, extremes=(-BIG, -100.0, -20.0, -0.0, 1e-4, 20.0, 100.0, BIG)),
        floor=5.7e-7,
        dtype=F16,
    ),
    Case("gelu", "gelu", "run_gelu", 6, pointwise_case(B + (64,), std=3.0, approximate="none"), floor=4.4e-7),
    Case("gelu_tanh", "gelu", "run_gelu", 7, pointwise_case(B + (64,), std=3.0, approximate="tanh"), floor=7.2e-8),
    Case("softmax", "softmax", "run_softmax", 8, softmax_case(B + (64,), dim=-1, std=2.0), floor=1.2e-7),
    Case("softmax_dim0", "softmax", "run_softmax", 9, softmax_case((10, 3, 7), dim=0, std=2.0), floor=1.4e-7),
    Case(
        "softmax_large_logits",
        "softmax",
        "run_softmax",
        10,
        softmax_case((6, 50), dim=-1, std=BIG, mean=BIG),
        floor=2.4e-59,
    ),
    Case(
        "softmax_masked",
        "softmax",
        "run_softmax",
        11,
        softmax_case((8, 16), dim=-1, std=2.0, mask_fraction=0.5),
        floor=1.1e-7,
    ),
    Case("rmsnorm", "rmsnorm", "run_rmsnorm", 12, rmsnorm_case(B, 64, eps=1e-5), floor=1.3e-7),
    # witness: activations of size ~1e-3 make mean(x^2) ~ eps, so where eps goes matters
    Case("rmsnorm_small_scale", "rmsnorm", "run_rmsnorm", 13, rmsnorm_case(B, 64, eps=1e-5, x_std=1e-3), floor=1.1e-7),
    Case("rmsnorm_custom_eps", "rmsnorm", "run_rmsnorm", 14, rmsnorm_case((3, 5), 32, eps=0.25), floor=9.3e-8),
    Case(
        "rmsnorm_bf16", "rmsnorm", "run_rmsnorm", 15, rmsnorm_case(B, 64, eps=1e-5, x_std=4.0), floor=2.8e-3, dtype=BF16
    ),
    # witness: x ~ 300 makes x^2 overflow float16 (max 65504) unless the sum is taken in float32
    Case(
        "rmsnorm_fp16_large",
        "rmsnorm",
        "run_rmsnorm",
        26,
        rmsnorm_case(B, 64, eps=1e-5, x_std=300.0),
        floor=0.00037,
        dtype=F16,
    ),
    # witness: a large common offset separates LayerNorm (subtracts it) from RMSNorm (does not)
    Case(
        "layernorm",
        "layernorm",
        "run_layernorm",
        16,
        layernorm_case(B, 64, eps=1e-5, x_std=2.0, x_mean=3.0),
        floor=3.1e-7,
    ),
    Case(
        "layernorm_bf16",
        "layernorm",
        "run_layernorm",
        17,
        layernorm_case(B, 64, eps=1e-5, x_std=2.0, x_mean=1.0),
        floor=2.8e-3,
        dtype=BF16,
    ),
    # witness: a mean of 64 with spread 1 in bfloat16: a mean taken (and subtracted) in bfloat16
    # is off by up to a quarter, which swamps the centred values; float32 inside is exact enough
    Case(
        "layernorm_bf16_offset",
        "layernorm",
        "run_layernorm",
        27,
        layernorm_case(B, 64, eps=1e-5, x_std=1.0, x_mean=64.0),
        floor=2.6e-3,
        dtype=BF16,
    ),
    Case("swiglu", "swiglu", "run_swiglu", 18, swiglu_case(B, 64, 128), floor=9.0e-7),
    Case("swiglu_4d", "swiglu", "run_swiglu", 19, swiglu_case((2, 2, 3), 40, 96, x_std=3.0), floor=6.5e-7),
    Case("swiglu_bf16", "swiglu", "run_swiglu", 20, swiglu_case(B, 64, 128), floor=1.7e-2, dtype=BF16),
    Case(
        "positionwise_ffn",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        21,
        positionwise_case(B, 64, 256),
        floor=7.6e-7,
    ),
    # witness: an activation other than the default GELU, SiLU (Swish; an FFN ignoring `activation` fails)
    Case(
        "positionwise_ffn_swish",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        40,
        positionwise_case(B, 64, 256, activation="silu"),
        floor=9.0e-7,
    ),
    Case(
        "ffn_block_llama",
        "ffn_block",
        "run_ffn_block",
        22,
        ffn_block_case(B, 64, 192, "rmsnorm", "swiglu", "silu"),
        floor=3.8e-7,
    ),
    Case(
        "ffn_block_original",
        "ffn_block",
        "run_ffn_block",
        23,
        ffn_block_case(B, 64, 256, "layernorm", "positionwise", "gelu", bias=True),
        floor=4.7e-7,
    ),
    # attention: CS336's shapes (4 x 12 queries, 16 keys, d_k 64) with a mask that is not causal
    # (a causal-only implementation, or an inverted mask, fails) and a query that may attend to
    # nothing (its output is 0: a -1e9 fill instead of -inf averages V there); no mask; 4-D with d_v != d_k
    Case(
        "attention_random_mask",
        "attention",
        "run_scaled_dot_product_attention",
        28,
        attention_case((4,), 12, 16, 64, 64, mask="fully_masked_row", scale=1.5),
        floor=1.3e-6,
    ),
    Case(
        "attention_unmasked",
        "attention",
        "run_scaled_dot_product_attention",
        29,
        attention_case((2, 3), 10, 10, 16, 8, scale=2.0),
        floor=8.5e-7,
    ),
    # rope: CS336's (4 x 12, d_k 64, theta 10000) at positions 0..11; per-row positions that are
    # not arange (a packed or left-padded batch) in a table of 1024
    Case("rope", "rope", "run_rope", 30, rope_case((4,), 12, 64, 10000.0, 2048), floor=7.3e-8),
    Case(
        "rope_positions_not_arange",
        "rope",
        "run_rope",
        31,
        rope_case((2, 3), 9, 32, 10000.0, 1024, positions="random"),
        floor=7.9e-8,
    ),
    # mha: no RoPE; with RoPE, grouped-query (2 kv heads for 4 query heads) at positions not arange
    Case("mha", "mha", "run_multihead_self_attention", 32, mha_case((4,), 12, 64, 4), floor=2.1e-6),
    Case(
        "mha_rotary_gqa",
        "mha",
        "run_multihead_self_attention_with_rope",
        33,
        mha_case((2,), 10, 64, 4, num_kv_heads=2, theta=10000.0, max_seq_len=64, positions="random"),
        floor=1.1e-6,
    ),
    # block: CS336's pre-norm layer; grouped-query with a sequence shorter than max_seq_len
    Case("block", "block", "run_transformer_block", 34, block_case(4, 12, 64, 4, 128, 16, 10000.0), floor=6.7e-7),
    Case(
        "block_gqa_short",
        "block",
        "run_transformer_block",
        35,
        block_case(2, 7, 64, 4, 96, 32, 10000.0, num_kv_heads=2),
        floor=5.8e-7,
    ),
    # lm: 2 layers, untied head, input shorter than the context; tied head (SmolLM2) with GQA
    Case("lm", "lm", "run_transformer_lm", 36, lm_case(4, 12, 100, 16, 64, 2, 4, 128), floor=1.6e-6),
    Case(
        "lm_tied_head_gqa",
        "lm",
        "run_transformer_lm",
        37,
        lm_case(2, 9, 80, 32, 64, 2, 4, 96, num_kv_heads=2, tie=True),
        floor=1.3e-6,
    ),
    # generate: greedy token ids (exact) from a 5-token prompt; a prompt that leaves room for
    # only 4 of the 10 tokens asked for (generation stops at context_length)
    Case(
        "generate_greedy",
        "generate",
        "run_generate",
        38,
        generate_case(5, 12, 64, 32, 32, 2, 4, 64),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "generate_until_context_full",
        "generate",
        "run_generate",
        39,
        generate_case(12, 10, 64, 16, 32, 2, 4, 64, num_kv_heads=2, tie=True),
        floor=EXACT,
        out_dtype=I64,
    ),
    # cross_entropy: CS336's (4 x 12 positions) over 100 classes; witnesses: logits around 1000
    # (exp overflows unless the max is subtracted); a spread of ~60 below a max under 0 (the target's
    # probability underflows, so log(softmax) gives inf while exp stays finite); logits of +-1e4
    Case("cross_entropy", "cross_entropy", "run_cross_entropy", 70, cross_entropy_case(B, 100, std=2.0), floor=1.1e-8),
    Case(
        "cross_entropy_2d_offset_logits",
        "cross_entropy",
        "run_cross_entropy",
        71,
        cross_entropy_case((16,), 50, std=4.0, mean=1000.0),
        floor=5.0e-8,
    ),
    Case(
        "cross_entropy_bf16",
        "cross_entropy",
        "run_cross_entropy",
        72,
        cross_entropy_case(B, 100, std=3.0),
        floor=3.3e-3,
        dtype=BF16,
    ),
    Case(
        "cross_entropy_far_targets",
        "cross_entropy",
        "run_cross_entropy",
        73,
        cross_entropy_case((6, 10), 64, std=60.0, mean=-150.0),
        floor=1.4e-8,
    ),
    Case(
        "cross_entropy_huge_logits",
        "cross_entropy",
        "run_cross_entropy",
        74,
        cross_entropy_case((8,), 32, std=BIG),
        floor=3.5e-8,
    ),
    # adamw: 10 steps of a weight and a bias; witnesses: gradients of ~1e-4 at a tiny lr, where eps
    # inside or outside the square root differs; strong weight decay
    Case(
        "adamw",
        "adamw",
        "run_adamw_steps",
        75,
        adamw_case({"weight": (8, 16), "bias": (16,)}, 10, lr=1e-3, weight_decay=0.01),
        floor=4.1e-7,
    ),
    Case(
        "adamw_small_gradients",
        "adamw",
        "run_adamw_steps",
        76,
        adamw_case({"weight": (6, 5)}, 10, lr=1e-5, weight_decay=0.01, grad_scale=1e-4, param_std=0.1),
        floor=2.6e-7,
    ),
    Case(
        "adamw_strong_decay",
        "adamw",
        "run_adamw_steps",
        77,
        adamw_case({"weight": (4, 9), "bias": (9,)}, 8, lr=5e-4, weight_decay=0.2, betas=(0.8, 0.99)),
        floor=2.4e-7,
    ),
    # lr_schedule: CS336's schedule (1, 0.1, 7, 21); no warm-up
    Case(
        "lr_schedule", "lr_schedule", "run_lr_schedule_at", 80, lr_schedule_case(1.0, 0.1, 7, 21), floor=0.0, dtype=F64
    ),
    Case(
        "lr_schedule_no_warmup",
        "lr_schedule",
        "run_lr_schedule_at",
        81,
        lr_schedule_case(3e-4, 3e-5, 0, 100),
        floor=0.0,
        dtype=F64,
    ),
    # gradient_clipping: CS336's max_l2_norm 1e-2 with the global norm 3x above it; below it (left
    # alone); parameters without a gradient and given as an iterator (model.parameters())
    Case(
        "gradient_clipping",
        "gradient_clipping",
        "run_gradient_clipping_of",
        84,
        gradient_clipping_case({"a": (5, 5), "b": (7,), "c": (3, 4)}, 1e-2, 3.0),
        floor=3.8e-8,
    ),
    Case(
        "gradient_clipping_below_max",
        "gradient_clipping",
        "run_gradient_clipping_of",
        85,
        gradient_clipping_case({"a": (4, 6), "b": (6,)}, 1.0, 0.5),
        floor=0.0,
    ),
    Case(
        "gradient_clipping_one_pass_no_grad",
        "gradient_clipping",
        "run_gradient_clipping_of",
        86,
        gradient_clipping_case({"a": (3, 3), "b": (5,), "c": (2, 2)}, 0.5, 2.0, params_without_grad=2, one_pass=True),
        floor=1.3e-7,
    ),
    # get_batch: 400 batches of 40 windows of 7 tokens from a uint16 token file of 72 distinct ids
    # (np.memmap), seeded; the output is 1 for each check of adapters.GET_BATCH_CHECKS that holds
    # (exact: a correct get_batch fails one with probability < 1e-6). witness: one window repeated
    # in every row lumps the counts of its 65 starts into multiples of 40, beyond their bounds
    Case(
        "get_batch", "get_batch", "run_get_batch_checks", 42, get_batch_case(72, 40, 7, 400), floor=EXACT, out_dtype=I64
    ),
    # checkpoint: 6 AdamW steps, save to a path, load into a fresh model and optimizer, 4 more steps
    Case(
        "checkpoint",
        "checkpoint",
        "run_checkpoint_resume",
        41,
        checkpoint_case({"w": (8, 6), "b": (6,)}, 10, 6),
        floor=2.3e-7,
    ),
    # tensor parallelism at world size 2 (each case starts a group of processes). witness: square
    # weights, so a shard taken along the wrong axis still loads and gives a wrong output
    Case(
        "parallel_column",
        "parallel",
        "run_column_parallel_linear",
        60,
        parallel_column_case(B, 64, 64, 2),
        floor=3.5e-7,
    ),
    Case(
        "parallel_column_sharded",
        "parallel",
        "run_column_parallel_linear",
        61,
        parallel_column_case((3, 5), 32, 48, 2, gather_output=False),
        floor=2.1e-7,
    ),
    Case("parallel_row", "parallel", "run_row_parallel_linear", 62, parallel_row_case(B, 64, 64, 2), floor=4.2e-7),
    Case("parallel_ffn", "parallel", "run_parallel_swiglu", 63, parallel_ffn_case(B, 64, 128, 2), floor=1.1e-6),
    # train_bpe: the merges and vocabulary (as tensors.bpe_table, exact) of ~15 kB of synthetic text
    # (bpe_builders.py) whose documents are separated by <|endoftext|>, the glued words around it
    # a witness for merging across it; and of text without special tokens
    Case(
        "train_bpe_one_special",
        "train_bpe",
        "run_train_bpe_on_text",
        90,
        train_bpe_case(150, 400, [EOT]),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "train_bpe_no_specials",
        "train_bpe",
        "run_train_bpe_on_text",
        91,
        train_bpe_case(100, 320, []),
        floor=EXACT,
        out_dtype=I64,
    ),
    # tokenizer: a vocabulary of 400 trained on synthetic text; encode a text holding both
    # <|endoftext|> and <|endoftext|><|endoftext|> (witness: both listed, the longer must win);
    # decode ids with lone bytes of multi-byte characters among them (U+FFFD, not an error);
    # encode_iterable over a text's lines
    Case(
        "tokenizer_encode_overlapping_specials",
        "tokenizer",
        "run_tokenizer_encode",
        92,
        tokenizer_case(400, [EOT, EOT * 2]),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "tokenizer_decode_split_characters",
        "tokenizer",
        "run_tokenizer_decode",
        93,
        tokenizer_case(400, [EOT], what="ids"),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "tokenizer_encode_iterable_lines",
        "tokenizer",
        "run_tokenizer_encode_iterable",
        94,
        tokenizer_case(400, [EOT, EOT * 2]),
        floor=EXACT,
        out_dtype=I64,
    ),
]

# Variety (tests/staff/test_public_case_variety.py): across a component's public cases every
# argument of its adapters takes two values: dims, eps, activation, theta, world size, the
# number of leading dimensions (1-D, 2-D, 4-D as well as CS336's 3-D) and the dtype (float32,
# bfloat16 and float64), so code that hard-codes one of them fails a public test.
PUBLIC_CASES += [
    Case("linear_2d_bf16", "linear", "run_linear", 100, linear_case((7,), 32, 48), floor=0.0025, dtype=BF16),
    Case("linear_f64", "linear", "run_linear", 101, linear_case((3,), 16, 24, x_std=2.0), floor=1.5e-16, dtype=F64),
    # Linear(bias=True) (beyond CS336; the position-wise FFN's layers)
    Case("linear_with_bias", "linear", "run_linear_with_bias", 148, linear_bias_case(B, 32, 40), floor=3.2e-7),
    Case(
        "linear_with_bias_4d_f64",
        "linear",
        "run_linear_with_bias",
        149,
        linear_bias_case((2, 3, 4), 12, 20),
        floor=1.9e-16,
        dtype=F64,
    ),
    Case(
        "embedding_unbatched_ids_bf16",
        "embedding",
        "run_embedding",
        102,
        embedding_case((9,), 50, 24),
        floor=EXACT,
        dtype=BF16,
    ),
    Case(
        "embedding_3d_ids_f64",
        "embedding",
        "run_embedding",
        103,
        embedding_case((2, 2, 3), 20, 8),
        floor=EXACT,
        dtype=F64,
    ),
    Case("silu_4d_f64", "silu", "run_silu", 150, pointwise_case((2, 3, 4, 5), std=3.0), floor=1.2e-16, dtype=F64),
    Case(
        "gelu_tanh_2d_bf16",
        "gelu",
        "run_gelu",
        104,
        pointwise_case((6, 40), std=3.0, approximate="tanh"),
        floor=0.0016,
        dtype=BF16,
    ),
    Case(
        "gelu_4d_f64",
        "gelu",
        "run_gelu",
        105,
        pointwise_case((2, 3, 4, 5), std=3.0, approximate="none"),
        floor=1.4e-16,
        dtype=F64,
    ),
    Case(
        "softmax_2d_bf16",
        "softmax",
        "run_softmax",
        106,
        softmax_case((6, 20), dim=-1, std=3.0),
        floor=0.0019,
        dtype=BF16,
    ),
    Case(
        "softmax_4d_f64",
        "softmax",
        "run_softmax",
        107,
        softmax_case((2, 3, 4, 5), dim=2, std=2.0),
        floor=9.5e-17,
        dtype=F64,
    ),
    # a fixed reduction axis (dim=2) fails both; activations of ~0.05 make eps = 1e-3 matter
    Case("rmsnorm_rows_f64", "rmsnorm", "run_rmsnorm", 108, rmsnorm_case((7,), 24, eps=1e-6), floor=0.0, dtype=F64),
    Case(
        "rmsnorm_4d_eps", "rmsnorm", "run_rmsnorm", 109, rmsnorm_case((2, 3, 4), 16, eps=1e-3, x_std=0.05), floor=9e-08
    ),
    # eps comparable with the variance: a hard-coded 1e-5 fails
    Case(
        "layernorm_2d_f64_eps",
        "layernorm",
        "run_layernorm",
        110,
        layernorm_case((7,), 24, eps=0.1, x_std=0.5, x_mean=1.0),
        floor=4.9e-16,
        dtype=F64,
    ),
    Case(
        "layernorm_4d_small_eps",
        "layernorm",
        "run_layernorm",
        111,
        layernorm_case((2, 3, 4), 16, eps=1e-3, x_std=0.05, x_mean=-0.2),
        floor=5.1e-7,
    ),
    Case("swiglu_2d_f64", "swiglu", "run_swiglu", 112, swiglu_case((6,), 24, 72), floor=5.6e-16, dtype=F64),
    Case(
        "positionwise_ffn_relu_2d_f64",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        113,
        positionwise_case((6,), 24, 40, activation="relu"),
        floor=4.0e-16,
        dtype=F64,
    ),
    Case(
        "positionwise_ffn_tanh_4d_bf16",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        114,
        positionwise_case((2, 3, 4), 16, 48, activation="gelu_tanh"),
        floor=0.0079,
        dtype=BF16,
    ),
    Case(
        "ffn_block_original_2d_f64_eps",
        "ffn_block",
        "run_ffn_block",
        115,
        ffn_block_case((6,), 24, 64, "layernorm", "positionwise", "relu", bias=True, eps=0.5),
        floor=4e-16,
        dtype=F64,
    ),
    Case(
        "ffn_block_llama_4d_bf16",
        "ffn_block",
        "run_ffn_block",
        116,
        ffn_block_case((2, 2, 3), 32, 96, "rmsnorm", "swiglu", "silu", eps=1e-6),
        floor=0.0023,
        dtype=BF16,
    ),
    Case(
        "attention_4d_f64",
        "attention",
        "run_scaled_dot_product_attention",
        117,
        attention_case((2, 2), 5, 6, 8, 8, mask="random"),
        floor=4.3e-16,
        dtype=F64,
    ),
    Case(
        "attention_2d_bf16",
        "attention",
        "run_scaled_dot_product_attention",
        118,
        attention_case((), 6, 9, 16, 16, mask="fully_masked_row"),
        floor=0.0036,
        dtype=BF16,
    ),
    # positions out of order (nothing says they increase), Llama 3's theta
    Case(
        "rope_shuffled_positions_f64",
        "rope",
        "run_rope",
        119,
        rope_case((3,), 8, 16, 500000.0, 64, positions="shuffled"),
        floor=1.5e-16,
        dtype=F64,
    ),
    Case("rope_unbatched_bf16", "rope", "run_rope", 120, rope_case((), 10, 32, 1000.0, 32), floor=0.0025, dtype=BF16),
    Case("mha_4d_f64", "mha", "run_multihead_self_attention", 121, mha_case((2, 2), 5, 48, 3), floor=9e-16, dtype=F64),
    Case(
        "mha_rotary_shuffled_bf16",
        "mha",
        "run_multihead_self_attention_with_rope",
        122,
        mha_case((), 8, 32, 2, num_kv_heads=1, theta=500000.0, max_seq_len=32, positions="shuffled"),
        floor=0.0085,
        dtype=BF16,
    ),
    Case(
        "block_f64",
        "block",
        "run_transformer_block",
        123,
        block_case(2, 5, 48, 3, 96, 16, 500000.0),
        floor=6.1e-16,
        dtype=F64,
    ),
    Case(
        "block_mqa_short_bf16",
        "block",
        "run_transformer_block",
        124,
        block_case(1, 6, 32, 2, 64, 8, 1000.0, num_kv_heads=1),
        floor=0.0053,
        dtype=BF16,
    ),
    Case(
        "lm_f64",
        "lm",
        "run_transformer_lm",
        125,
        lm_case(2, 6, 50, 16, 32, 1, 2, 64, rope_theta=500000.0),
        floor=1.1e-15,
        dtype=F64,
    ),
    Case(
        "lm_three_layers_bf16",
        "lm",
        "run_transformer_lm",
        126,
        lm_case(1, 8, 40, 8, 32, 3, 2, 64, rope_theta=1000.0),
        floor=0.019,
        dtype=BF16,
    ),
    Case(
        "generate_f64",
        "generate",
        "run_generate",
        127,
        generate_case(4, 6, 48, 24, 48, 1, 3, 96, rope_theta=500000.0),
        floor=EXACT,
        dtype=F64,
        out_dtype=I64,
    ),
    Case(
        "cross_entropy_4d_f64",
        "cross_entropy",
        "run_cross_entropy",
        133,
        cross_entropy_case((2, 3, 4), 30, std=3.0),
        floor=0.0,
        dtype=F64,
    ),
    # eps = 0 and no weight decay: a hard-coded eps fails, and the accepted orders agree to float64
    # rounding (CS336's Algorithm 1 adds eps to sqrt(v) before the bias correction and decays after
    # the step; torch.optim.AdamW adds it after and decays before: they differ by ~1e-5 otherwise)
    Case(
        "adamw_f64_zero_eps",
        "adamw",
        "run_adamw_steps",
        129,
        adamw_case({"weight": (5, 7)}, 6, lr=1e-2, weight_decay=0.0, eps=0.0, grad_scale=1e-2),
        floor=4.4e-17,
        dtype=F64,
    ),
    Case(
        "gradient_clipping_f64",
        "gradient_clipping",
        "run_gradient_clipping_of",
        131,
        gradient_clipping_case({"a": (4, 3), "b": (5,)}, 2.0, 4.0),
        floor=2.6e-16,
        dtype=F64,
    ),
    Case(
        "gradient_clipping_2d_bf16",
        "gradient_clipping",
        "run_gradient_clipping_of",
        132,
        gradient_clipping_case({"a": (6,), "b": (2, 5)}, 0.1, 1.5),
        floor=0.0036,
        dtype=BF16,
    ),
    # what the public suite asserts of param groups, a state_dict resume and the returned norm
    Case(
        "adamw_two_groups",
        "adamw",
        "run_adamw_steps",
        151,
        adamw_case({"w": (3, 4), "b": (4,)}, 4, lr=2e-3, weight_decay=0.0, group_lrs=(1e-2, 5e-4)),
        floor=6.3e-8,
    ),
    Case(
        "adamw_resumed_from_state_dict",
        "adamw",
        "run_adamw_steps",
        152,
        adamw_case({"weight": (4, 3)}, 6, lr=5e-3, weight_decay=0.0, resume_after=2),
        floor=2.4e-8,
    ),
    Case(
        "gradient_clipping_returns_its_norm",
        "gradient_clipping",
        "run_gradient_clipping_of",
        153,
        gradient_clipping_case({"a": (3, 4), "b": (6,)}, 0.5, 2.0, with_norm=True),
        floor=4.3e-8,
    ),
    Case(
        "get_batch_uint32_long_windows",
        "get_batch",
        "run_get_batch_checks",
        134,
        get_batch_case(60, 16, 11, 300, vocab_size=2**20, token_dtype="uint32"),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "checkpoint_file_object_no_decay_f64",
        "checkpoint",
        "run_checkpoint_resume",
        135,
        checkpoint_case({"w": (5, 4)}, 7, 3, lr=5e-3, weight_decay=0.0, to="file"),
        floor=0.0,
        dtype=F64,
    ),
    Case(
        "tokenizer_decode_no_specials",
        "tokenizer",
        "run_tokenizer_decode",
        136,
        tokenizer_case(320, [], what="ids"),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "parallel_ffn_w1_f64",
        "parallel",
        "run_parallel_swiglu",
        137,
        parallel_ffn_case((6,), 32, 64, 1),
        # the grader's single-process judge of fresh draws (grader/fresh.py) computes this case's
        # output 1.3e-16 away from the rank's: the floor keeps that under 1/100 of the tolerance
        floor=1.3e-15,
        dtype=F64,
    ),
    Case(
        "parallel_row_4d_bf16",
        "parallel",
        "run_row_parallel_linear",
        138,
        parallel_row_case((2, 2, 3), 32, 48, 2),
        floor=0.0038,
        dtype=BF16,
    ),
]

# generate: what sampling.py computes, graded on its own: the nucleus of probabilities (top-p),
# the distribution a token is drawn from (temperature on the logits, then top-p), seeded draws
# (ids compared as ids: the draw is torch.multinomial on the distribution in vocabulary order);
# a whole sampled generation; and generation that stops after an end-of-sequence id
PUBLIC_CASES += [
    Case(
        "generate_top_p_filter",
        "generate",
        "run_top_p_filter",
        140,
        sampling_case((6,), 40, 2.0, "filter", top_p=0.8),
        floor=9.6e-08,
    ),
    Case(
        "generate_top_p_filter_4d_f64",
        "generate",
        "run_top_p_filter",
        141,
        sampling_case((2, 3, 4), 16, 1.5, "filter", top_p=0.5),
        floor=0.0,
        dtype=F64,
    ),
    # witness: a temperature of 0.6 on the logits sharpens the distribution; applied to the
    # probabilities after the softmax (and renormalised) it changes nothing
    Case(
        "generate_temperature_distribution",
        "generate",
        "run_next_token_distribution",
        142,
        sampling_case((5,), 30, 2.0, "distribution", temperature=0.6, top_p=1.0),
        floor=1.5e-07,
    ),
    Case(
        "generate_temperature_top_p_distribution_f64",
        "generate",
        "run_next_token_distribution",
        143,
        sampling_case((2, 4), 25, 1.0, "distribution", temperature=1.7, top_p=0.9),
        floor=2.2e-16,
        dtype=F64,
    ),
    Case(
        "generate_sampled_ids",
        "generate",
        "run_sample_next_token",
        144,
        sampling_case((64,), 20, 2.0, "draw", temperature=0.8, top_p=0.9),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "generate_sampled_ids_4d_f64",
        "generate",
        "run_sample_next_token",
        145,
        sampling_case((4, 4, 4), 12, 1.0, "draw", temperature=1.5, top_p=1.0),
        floor=EXACT,
        dtype=F64,
        out_dtype=I64,
    ),
    Case(
        "generate_sampled",
        "generate",
        "run_generate",
        146,
        generate_case(4, 12, 32, 32, 32, 2, 4, 64, temperature=1.0, top_p=0.9),
        floor=EXACT,
        out_dtype=I64,
    ),
    Case(
        "generate_stops_at_eos",
        "generate",
        "run_generate",
        147,
        edited(generate_case(5, 10, 64, 32, 32, 2, 4, 64), _eos_is_the_third_token),
        floor=EXACT,
        out_dtype=I64,
    ),
]

HIDDEN_CASES = [
    # linear: odd sizes, a 1-D input, bfloat16 with 4-D input
    hidden("linear_odd", "linear", "run_linear", 1001, linear_case((5,), 7, 13), floor=8.6e-8),
    hidden("linear_1d", "linear", "run_linear", 1002, linear_case((), 33, 17), floor=9.2e-8),
    hidden(
        "linear_4d_bf16",
        "linear",
        "run_linear",
        1003,
        linear_case((2, 3, 4), 24, 10, x_std=2.0),
        floor=2.5e-3,
        dtype=BF16,
    ),
    # embedding: repeated ids and both ends of an odd vocabulary; 1-D and 3-D ids; bfloat16 table
    hidden(
        "embedding_repeated_ids",
        "embedding",
        "run_embedding",
        1011,
        edited(embedding_case((9,), 37, 13), _repeat_ids),
        floor=EXACT,
    ),
    hidden("embedding_3d_ids", "embedding", "run_embedding", 1012, embedding_case((2, 3, 5), 11, 7), floor=EXACT),
    hidden(
        "embedding_bf16", "embedding", "run_embedding", 1013, embedding_case((4, 6), 50, 16), floor=EXACT, dtype=BF16
    ),
    # silu: exactly 0 and large magnitudes (x or 0, never NaN); odd 1-D; bfloat16 4-D
    hidden(
        "silu_zero_and_large",
        "silu",
        "run_silu",
        1021,
        pointwise_case((3, 5, 7), std=4.0, extremes=PAIRS),
        floor=5.7e-10,
    ),
    hidden("silu_1d_odd", "silu", "run_silu", 1022, pointwise_case((13,), std=2.0), floor=2.5e-8),
    hidden(
        "silu_4d_bf16",
        "silu",
        "run_silu",
        1023,
        pointwise_case((2, 3, 4, 5), std=3.0, extremes=(0.0, 300.0, -300.0)),
        floor=4.1e-4,
        dtype=BF16,
    ),
    # gelu: exactly 0 and large magnitudes (exact form); tanh form on odd 1-D; bfloat16
    # (values of 1e4 would set the error scale rms(e) so high that the two GELU forms, which
    # differ by up to 5e-4, could not be told apart: they get a case of their own)
    hidden(
        "gelu_zero_and_large",
        "gelu",
        "run_gelu",
        1031,
        pointwise_case((2, 3, 4, 5), std=3.0, extremes=MODERATE_PAIRS, approximate="none"),
        floor=7.7e-8,
    ),
    hidden(
        "gelu_tanh_1d_odd",
        "gelu",
        "run_gelu",
        1032,
        pointwise_case((17,), std=3.0, extremes=(0.0, 88.0, -88.0), approximate="tanh"),
        floor=9.8e-9,
    ),
    hidden(
        "gelu_huge_values",
        "gelu",
        "run_gelu",
        1034,
        pointwise_case((6,), std=1.0, extremes=(BIG, -BIG, 1e3, -1e3, 0.0, -0.0), approximate="none"),
        floor=0.0,
    ),
    hidden(
        "gelu_bf16",
        "gelu",
        "run_gelu",
        1033,
        pointwise_case((4, 9), std=3.0, approximate="none"),
        floor=1.7e-3,
        dtype=BF16,
    ),
    # softmax: along a middle dim of a 4-D input; 1-D; a uniform row and a one-hot row; bfloat16
    hidden(
        "softmax_middle_dim", "softmax", "run_softmax", 1041, softmax_case((2, 5, 3, 4), dim=1, std=2.0), floor=8.4e-8
    ),
    hidden("softmax_1d", "softmax", "run_softmax", 1042, softmax_case((13,), dim=0, std=3.0), floor=6e-8),
    hidden(
        "softmax_uniform_and_one_hot",
        "softmax",
        "run_softmax",
        1043,
        edited(softmax_case((4, 11), dim=-1, std=2.0), _uniform_and_one_hot_rows),
        floor=6.7e-8,
    ),
    hidden(
        "softmax_bf16", "softmax", "run_softmax", 1044, softmax_case((6, 11), dim=-1, std=4.0), floor=1.5e-3, dtype=BF16
    ),
    # a fully masked row returns zeros (our documented definition; torch.softmax gives NaN)
    hidden(
        "softmax_fully_masked_row",
        "softmax",
        "run_softmax",
        1045,
        edited(softmax_case((4, 9), dim=-1, std=2.0, mask_fraction=0.3), _fully_masked_row),
        floor=7.2e-8,
    ),
    # rmsnorm: a zero row and a row with one huge entry; 1-D with another eps; bfloat16 4-D
    hidden(
        "rmsnorm_zero_row_and_spike",
        "rmsnorm",
        "run_rmsnorm",
        1051,
        edited(rmsnorm_case((4,), 33, eps=1e-5), _zero_row_and_spike),
        floor=8.8e-8,
    ),
    hidden("rmsnorm_1d", "rmsnorm", "run_rmsnorm", 1052, rmsnorm_case((), 7, eps=1e-6), floor=4.3e-8),
    hidden(
        "rmsnorm_4d_bf16",
        "rmsnorm",
        "run_rmsnorm",
        1053,
        rmsnorm_case((2, 3, 4), 20, eps=1e-5, x_std=3.0),
        floor=2.3e-3,
        dtype=BF16,
    ),
    # layernorm: a constant row (-> bias); 4-D with a large eps; 1-D bfloat16 with an offset
    hidden(
        "layernorm_constant_row",
        "layernorm",
        "run_layernorm",
        1061,
        edited(layernorm_case((5,), 33, eps=1e-5, x_mean=2.0), _constant_row),
        floor=2.3e-7,
    ),
    hidden(
        "layernorm_4d_eps", "layernorm", "run_layernorm", 1062, layernorm_case((2, 3, 4), 9, eps=1e-2), floor=1.4e-7
    ),
    hidden(
        "layernorm_1d_bf16",
        "layernorm",
        "run_layernorm",
        1063,
        layernorm_case((), 40, eps=1e-5, x_std=2.0, x_mean=4.0),
        floor=1.2e-3,
        dtype=BF16,
    ),
    # swiglu: d_ff not a multiple of 64 with odd d_model; 1-D; bfloat16
    hidden("swiglu_odd", "swiglu", "run_swiglu", 1071, swiglu_case((5,), 33, 100), floor=3.8e-7),
    hidden("swiglu_1d", "swiglu", "run_swiglu", 1072, swiglu_case((), 16, 45, x_std=2.0), floor=3.1e-7),
    hidden("swiglu_odd_bf16", "swiglu", "run_swiglu", 1073, swiglu_case((3, 4), 24, 100), floor=1.7e-2, dtype=BF16),
    # positionwise_ffn: odd sizes; ReLU on 4-D input; tanh-GELU in bfloat16
    hidden(
        "positionwise_ffn_odd",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        1081,
        positionwise_case((5,), 33, 100),
        floor=5.0e-7,
    ),
    hidden(
        "positionwise_ffn_relu_4d",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        1082,
        positionwise_case((2, 3, 4), 12, 20, activation="relu"),
        floor=1.5e-7,
    ),
    hidden(
        "positionwise_ffn_tanh_bf16",
        "positionwise_ffn",
        "run_positionwise_feedforward",
        1083,
        positionwise_case((4, 6), 16, 40, activation="gelu_tanh"),
        floor=7.4e-3,
        dtype=BF16,
    ),
    # ffn_block: both configs with odd d_ff; LayerNorm without bias + ReLU on a 1-D input; bfloat16
    hidden(
        "ffn_block_ln_pw_odd",
        "ffn_block",
        "run_ffn_block",
        1091,
        ffn_block_case((5,), 33, 100, "layernorm", "positionwise", "gelu", bias=True),
        floor=1.6e-7,
    ),
    hidden(
        "ffn_block_rms_glu_4d_odd",
        "ffn_block",
        "run_ffn_block",
        1092,
        ffn_block_case((2, 3, 4), 20, 100, "rmsnorm", "swiglu", "silu"),
        floor=1.2e-7,
    ),
    hidden(
        "ffn_block_ln_pw_nobias_1d",
        "ffn_block",
        "run_ffn_block",
        1093,
        ffn_block_case((), 16, 36, "layernorm", "positionwise", "relu"),
        floor=7.7e-8,
    ),
    hidden(
        "ffn_block_rms_glu_bf16",
        "ffn_block",
        "run_ffn_block",
        1094,
        ffn_block_case((4, 6), 24, 100, "rmsnorm", "swiglu", "silu"),
        floor=2.6e-3,
        dtype=BF16,
    ),
    # attention: a query that may attend to nothing (zeros, not NaN); 3-D bfloat16; one query
    hidden(
        "attention_fully_masked_row",
        "attention",
        "run_scaled_dot_product_attention",
        1101,
        attention_case((3,), 5, 7, 8, 8, mask="fully_masked_row", scale=1.5),
        floor=2.8e-7,
    ),
    hidden(
        "attention_bf16",
        "attention",
        "run_scaled_dot_product_attention",
        1102,
        attention_case((2, 2), 6, 9, 16, 16, mask="random", scale=1.5),
        floor=9.3e-3,
        dtype=BF16,
    ),
    hidden(
        "attention_one_query",
        "attention",
        "run_scaled_dot_product_attention",
        1103,
        attention_case((), 1, 13, 24, 5),
        floor=7.7e-8,
    ),
    # rope: the last positions of an 8192 table with Llama 3's theta 500000; 2-D bfloat16; d_k 2
    hidden(
        "rope_end_of_long_table",
        "rope",
        "run_rope",
        1111,
        rope_case((2,), 6, 16, 500000.0, 8192, positions="end"),
        floor=6.7e-8,
    ),
    hidden(
        "rope_bf16", "rope", "run_rope", 1112, rope_case((), 7, 24, 10000.0, 16, x_std=2.0), floor=0.0022, dtype=BF16
    ),
    hidden(
        "rope_pair_random_positions",
        "rope",
        "run_rope",
        1113,
        rope_case((5,), 4, 2, 100.0, 50, positions="random"),
        floor=3.5e-8,
    ),
    # mha: multi-query (one kv head) in bfloat16; 3-D batch of odd length with RoPE; one token
    hidden(
        "mha_mqa_bf16",
        "mha",
        "run_multihead_self_attention_with_rope",
        1121,
        mha_case((2,), 6, 48, 4, num_kv_heads=1, theta=10000.0, max_seq_len=16),
        floor=2.6e-2,
        dtype=BF16,
    ),
    hidden(
        "mha_3d_batch_odd",
        "mha",
        "run_multihead_self_attention_with_rope",
        1122,
        mha_case((2, 3), 7, 36, 3, theta=500000.0, max_seq_len=100, positions="random"),
        floor=1.5e-6,
    ),
    hidden(
        "mha_one_token",
        "mha",
        "run_multihead_self_attention",
        1123,
        mha_case((3,), 1, 32, 8, num_kv_heads=2),
        floor=2.3e-7,
    ),
    # block: multi-query, odd d_ff; a full-length bfloat16 sequence
    hidden(
        "block_mqa_odd",
        "block",
        "run_transformer_block",
        1131,
        block_case(3, 5, 48, 4, 100, 8, 10000.0, num_kv_heads=1),
        floor=5.2e-7,
    ),
    hidden(
        "block_bf16",
        "block",
        "run_transformer_block",
        1132,
        block_case(2, 8, 32, 2, 64, 8, 10000.0),
        floor=5.2e-3,
        dtype=BF16,
    ),
    # lm: one layer, odd vocabulary, the whole context; three layers, tied, multi-query, bfloat16
    hidden(
        "lm_one_layer_full_context", "lm", "run_transformer_lm", 1141, lm_case(3, 8, 37, 8, 32, 1, 2, 64), floor=7.4e-7
    ),
    hidden(
        "lm_tied_mqa_bf16",
        "lm",
        "run_transformer_lm",
        1142,
        lm_case(2, 6, 50, 16, 48, 3, 4, 100, num_kv_heads=1, tie=True),
        floor=2.8e-2,
        dtype=BF16,
    ),
    # generate: a one-token prompt, multi-query, tied; 3 layers and an odd vocabulary
    hidden(
        "generate_one_token_prompt",
        "generate",
        "run_generate",
        1151,
        generate_case(1, 9, 40, 24, 32, 2, 4, 64, num_kv_heads=1, tie=True),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "generate_three_layers",
        "generate",
        "run_generate",
        1152,
        generate_case(4, 7, 53, 16, 48, 3, 3, 80),
        floor=EXACT,
        out_dtype=I64,
    ),
    # sampled (temperature and top-p, seeded) from a tied grouped-query model, stopping after the
    # third id it draws
    hidden(
        "generate_sampled_stops_at_eos",
        "generate",
        "run_generate",
        1153,
        edited(
            generate_case(3, 9, 40, 24, 32, 2, 4, 64, num_kv_heads=2, tie=True, temperature=0.7, top_p=0.8),
            _eos_is_the_third_token,
        ),
        floor=EXACT,
        out_dtype=I64,
    ),
    # cross_entropy: one position (0-d targets); 4-D odd; float16 logits of +-1e3 (exp overflows float16 past 11); one class (loss 0)
    hidden(
        "cross_entropy_one_position",
        "cross_entropy",
        "run_cross_entropy",
        1161,
        cross_entropy_case((), 37, std=3.0),
        floor=1.6e-8,
    ),
    hidden(
        "cross_entropy_4d_odd",
        "cross_entropy",
        "run_cross_entropy",
        1162,
        cross_entropy_case((2, 3, 5), 7, std=2.0),
        floor=4.2e-9,
    ),
    hidden(
        "cross_entropy_fp16_large",
        "cross_entropy",
        "run_cross_entropy",
        1163,
        cross_entropy_case((4, 6), 50, std=1e3),
        floor=1.8e-4,
        dtype=F16,
    ),
    hidden(
        "cross_entropy_one_class",
        "cross_entropy",
        "run_cross_entropy",
        1164,
        cross_entropy_case((5,), 1, std=2.0),
        floor=0.0,
    ),
    # adamw: one odd-shaped parameter over 40 steps; three parameters, other betas. (No float64
    # case: its tolerance, 1e-15, is below what another CPU's vector sqrt moves the expected
    # output by; tests/test_adamw.py compares with torch.optim.AdamW in float64.)
    hidden(
        "adamw_odd_many_steps",
        "adamw",
        "run_adamw_steps",
        1171,
        adamw_case({"weight": (5, 7)}, 40, lr=1e-3, weight_decay=0.01),
        floor=8.9e-7,
    ),
    hidden(
        "adamw_three_params",
        "adamw",
        "run_adamw_steps",
        1172,
        adamw_case({"embed": (11, 4), "gain": (4,), "head": (3, 4)}, 6, lr=1e-3, weight_decay=0.05, betas=(0.85, 0.98)),
        floor=2.0e-7,
    ),
    # what tests/test_adamw.py asserts beyond one group's steps: each param group's own lr, and a
    # state_dict that carries m, v and the step count into a new optimizer
    hidden(
        "adamw_param_groups",
        "adamw",
        "run_adamw_steps",
        1173,
        adamw_case({"a": (4, 5), "b": (6,)}, 5, lr=1e-3, weight_decay=0.0, group_lrs=(3e-2, 1e-4)),
        floor=8.9e-8,
    ),
    hidden(
        "adamw_state_dict_resume",
        "adamw",
        "run_adamw_steps",
        1174,
        adamw_case({"weight": (5, 4), "bias": (4,)}, 8, lr=1e-2, weight_decay=0.0, resume_after=3),
        floor=8.9e-8,
    ),
    # lr_schedule: a long schedule (LLaMA-like); warm-up as long as the cycle; a floor of 0
    hidden(
        "lr_schedule_long",
        "lr_schedule",
        "run_lr_schedule_at",
        1181,
        lr_schedule_case(6e-4, 6e-5, 2000, 100000, random_iters=40),
        floor=0.0,
        dtype=F64,
    ),
    hidden(
        "lr_schedule_warmup_is_whole_cycle",
        "lr_schedule",
        "run_lr_schedule_at",
        1182,
        lr_schedule_case(1e-3, 1e-4, 10, 10, random_iters=5),
        floor=0.0,
        dtype=F64,
    ),
    hidden(
        "lr_schedule_zero_floor",
        "lr_schedule",
        "run_lr_schedule_at",
        1183,
        lr_schedule_case(2.0, 0.0, 3, 50),
        floor=0.0,
        dtype=F64,
    ),
    # gradient_clipping: bfloat16; one 3-D gradient far above the max; exactly at the max (left alone)
    hidden(
        "gradient_clipping_bf16",
        "gradient_clipping",
        "run_gradient_clipping_of",
        1191,
        gradient_clipping_case({"a": (4, 5), "b": (5,)}, 1.0, 4.0),
        floor=3.2e-4,
        dtype=BF16,
    ),
    hidden(
        "gradient_clipping_3d_far_above",
        "gradient_clipping",
        "run_gradient_clipping_of",
        1192,
        gradient_clipping_case({"a": (2, 3, 4)}, 0.1, 1e3, params_without_grad=1),
        floor=5.1e-8,
    ),
    hidden(
        "gradient_clipping_many_small",
        "gradient_clipping",
        "run_gradient_clipping_of",
        1193,
        gradient_clipping_case({f"p{i}": (3,) for i in range(9)}, 2.0, 0.9, one_pass=True),
        floor=0.0,
    ),
    # the norm gradient_clipping returns (tests/test_gradient_clipping.py asserts it); float16
    # gradients of ~1e3, whose squares overflow float16 unless the norm is summed in float32
    hidden(
        "gradient_clipping_returned_norm",
        "gradient_clipping",
        "run_gradient_clipping_of",
        1194,
        gradient_clipping_case({"a": (5, 5), "b": (7,)}, 1.0, 3.0, with_norm=True),
        floor=1.1e-8,
    ),
    hidden(
        "gradient_clipping_f16_squares_overflow",
        "gradient_clipping",
        "run_gradient_clipping_of",
        1195,
        gradient_clipping_case({"a": (5, 5), "b": (7,)}, 1.0, 2000.0, with_norm=True),
        floor=2.3e-5,
        dtype=F16,
    ),
    # parallel: 4 ranks, odd batch shapes and a 1-D input; 1 rank (no collective at all); bfloat16
    hidden(
        "parallel_column_w4",
        "parallel",
        "run_column_parallel_linear",
        1201,
        parallel_column_case((5,), 7, 12, 4),
        floor=9.8e-8,
    ),
    hidden(
        "parallel_row_1d_w4", "parallel", "run_row_parallel_linear", 1202, parallel_row_case((), 36, 5, 4), floor=5.1e-8
    ),
    hidden(
        "parallel_row_w1",
        "parallel",
        "run_row_parallel_linear",
        1203,
        parallel_row_case((2, 3), 20, 12, 1),
        floor=1.1e-7,
    ),
    hidden(
        "parallel_ffn_w4_4d",
        "parallel",
        "run_parallel_swiglu",
        1204,
        parallel_ffn_case((2, 3, 4), 20, 40, 4),
        floor=5.0e-7,
    ),
    hidden(
        "parallel_ffn_bf16",
        "parallel",
        "run_parallel_swiglu",
        1205,
        parallel_ffn_case((4, 6), 24, 64, 2),
        floor=1.1e-2,
        dtype=BF16,
    ),
    # train_bpe: ~0.4 MB and 1,500 tokens (what the handout's time budget is about); two special
    # tokens and a fifth of the words Unicode or emoji; a vocabulary of only the bytes and the
    # special token (no merge)
    hidden(
        "train_bpe_larger_corpus",
        "train_bpe",
        "run_train_bpe_on_text",
        1301,
        train_bpe_case(4000, 1500, [EOT], words_per_doc=(10, 40), lexicon_size=2000),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "train_bpe_unicode_two_specials",
        "train_bpe",
        "run_train_bpe_on_text",
        1302,
        train_bpe_case(200, 600, [EOT, "<|pad|>"], unicode_share=0.1),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "train_bpe_zero_merges",
        "train_bpe",
        "run_train_bpe_on_text",
        1303,
        train_bpe_case(20, 257, [EOT]),
        floor=EXACT,
        out_dtype=I64,
    ),
    # tokenizer: no special tokens (None); encode_iterable on Unicode-heavy lines with a larger
    # vocabulary; decoding with a vocabulary of 1,000
    hidden(
        "tokenizer_no_specials",
        "tokenizer",
        "run_tokenizer_encode",
        1311,
        tokenizer_case(500, None),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "tokenizer_iterable_unicode",
        "tokenizer",
        "run_tokenizer_encode_iterable",
        1312,
        tokenizer_case(1000, [EOT], n_docs=600, text_docs=60, unicode_share=0.1),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "tokenizer_decode_larger_vocab",
        "tokenizer",
        "run_tokenizer_decode",
        1313,
        tokenizer_case(1000, [EOT, "<|pad|>"], n_docs=600, what="ids"),
        floor=EXACT,
        out_dtype=I64,
    ),
]

HIDDEN_CASES += [
    # get_batch: one valid start only (context_length = len - 1); int32 token file of large ids with a
    # long context; batches of one row
    hidden(
        "get_batch_one_start",
        "get_batch",
        "run_get_batch_checks",
        1401,
        get_batch_case(13, 4, 12, 50),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "get_batch_int32_long_context",
        "get_batch",
        "run_get_batch_checks",
        1402,
        get_batch_case(300, 12, 64, 400, vocab_size=1 << 20, token_dtype="int32"),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "get_batch_rows_of_one",
        "get_batch",
        "run_get_batch_checks",
        1403,
        get_batch_case(20, 1, 3, 600),
        floor=EXACT,
        out_dtype=I64,
    ),
    # what tests/test_get_batch.py asserts of the `generator` argument, and rows drawn independently
    hidden(
        "get_batch_generator",
        "get_batch",
        "run_get_batch_generator_checks",
        1404,
        get_batch_generator_case(60, 6, 4, 20),
        floor=EXACT,
        out_dtype=I64,
    ),
    # checkpoint: an in-memory file object, float64; saved before any step (empty optimizer state);
    # saved one step before the end, a 3-D parameter
    hidden(
        "checkpoint_file_object_f64",
        "checkpoint",
        "run_checkpoint_resume",
        1411,
        checkpoint_case({"w1": (5, 7), "w2": (7, 3), "g": (3,)}, 9, 3, to="file"),
        # float64 AdamW steps: ours and torch's agree exactly here, but the expected output moves by
        # 6.3e-17 on PyTorch's generic CPU kernels (ATEN_CPU_CAPABILITY=default, `cs336 fixtures --check`)
        floor=1.0e-15,
        dtype=torch.float64,
    ),
    hidden(
        "checkpoint_before_any_step",
        "checkpoint",
        "run_checkpoint_resume",
        1412,
        checkpoint_case({"w": (4, 4)}, 5, 0, lr=3e-2),
        floor=1.2e-7,
    ),
    hidden(
        "checkpoint_one_step_left",
        "checkpoint",
        "run_checkpoint_resume",
        1413,
        checkpoint_case({"t": (3, 4, 5), "b": (5,)}, 8, 7, lr=5e-2, weight_decay=0.01),
        floor=2.1e-7,
    ),
]

CASES = PUBLIC_CASES + HIDDEN_CASES
BY_NAME = {c.name: c for c in CASES}


def cases_of(component: str, hidden: bool | None = None) -> list[Case]:
    """The cases of one component (public and hidden, or one kind), in registry order."""
    if component not in COMPONENTS:
        raise ValueError(f"unknown component {component!r}; valid names are {list(COMPONENTS)}")
    return [c for c in CASES if c.component == component and hidden in (None, c.hidden)]


# --- ladder26: new cases ---
# What the public suite and the ladders assert of train_bpe and the tokenizer that no case above
# checks. train_bpe: the ids of the vocabulary (bytes at 0-255, the specials next, the merges in
# order); a corpus holding '\r\n', '<', '|', '>' and the special token's word outside
# it (matched literally, no newline translation); a corpus whose pairs run out before vocab_size.
# tokenizer: a vocabulary numbered out of order (bytes away from ids 0-255, merged tokens not in
# merge order) with a special token it lacks; encode_iterable over lines with runs of newlines,
# and whether it yields before the last line is read. checkpoint: buffers, the optimizer's state and
# param groups, the model's own parameters, a strict load (adapters.CHECKPOINT_CHECKS).


def _ladder26_literal_corpus(rng) -> dict:
    words = ["a<b", "x|y", "<|end", "endoftext", "|>", "<<", "ab", "ba", "end", "text"]
    picks = rng.integers(0, len(words), size=400).tolist()
    seps = rng.integers(0, 4, size=400).tolist()
    parts = [words[p] + (" ", "\r\n", EOT, " \r\n\r\n")[s] for p, s in zip(picks, seps, strict=True)]
    corpus = "".join(parts)
    from cs336_basics.tokenizer import tensors

    return dict(corpus=tensors.text_to_tensor(corpus), vocab_size=330, special_tokens=[EOT])


def _ladder26_runs_out(rng) -> dict:
    from cs336_basics.tokenizer import tensors

    words = ["ab", "ba", "abc", "c"]
    corpus = " ".join(words[i] for i in rng.integers(0, len(words), size=40).tolist())
    return dict(corpus=tensors.text_to_tensor(corpus), vocab_size=300, special_tokens=[EOT])


def _ladder26_renumbered(rng) -> dict:
    """A trained vocabulary with its ids permuted; the text holds a special token it lacks."""
    from cs336_basics.staff.bpe_builders import trained_vocabulary
    from cs336_basics.tokenizer import tensors
    from cs336_basics.tokenizer.synthetic import synthetic_text

    kw = trained_vocabulary(rng, 300, 500, [EOT])
    vocab = tensors.tensors_to_vocab(kw["token_bytes"], kw["token_offsets"])
    merges = tensors.tensor_to_merges(kw["merges"], vocab)
    order = rng.permutation(len(vocab)).tolist()
    renumbered = {new: vocab[old] for new, old in enumerate(order)}
    token_bytes, token_offsets = tensors.vocab_to_tensors(renumbered)
    text = synthetic_text(rng, 20, [EOT, "<|new|>"], unicode_share=0.15)
    return dict(
        token_bytes=token_bytes,
        token_offsets=token_offsets,
        merges=tensors.merges_to_tensor(merges, renumbered),
        special_tokens=[EOT, "<|new|>"],
        text=tensors.text_to_tensor(text),
    )


def _ladder26_newline_runs(rng) -> dict:
    """A vocabulary trained on text with runs of newlines, and such a text's lines to encode."""
    from cs336_basics.tokenizer import tensors
    from cs336_basics.tokenizer.synthetic import synthetic_text

    def with_runs(text: str) -> str:
        return text.replace(" ", "\n\n\n ", 50).replace(".", ".\n\n", 50)

    corpus = with_runs(synthetic_text(rng, 200, [EOT]))
    import os
    import tempfile

    from cs336_basics.tokenizer.train_bpe import train_bpe

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(corpus.encode("utf-8"))
        vocab, merges = train_bpe(path, 400, [EOT], num_processes=1)
    token_bytes, token_offsets = tensors.vocab_to_tensors(vocab)
    text = with_runs(synthetic_text(rng, 20, [EOT], unicode_share=0.15))
    return dict(
        token_bytes=token_bytes,
        token_offsets=token_offsets,
        merges=tensors.merges_to_tensor(merges, vocab),
        special_tokens=[EOT],
        text=tensors.text_to_tensor(text),
    )


def _ladder26_checkpoint(rng) -> dict:
    """Two parameters and a buffer, three steps."""
    weights = {
        "w": torch.tensor(rng.standard_normal((4, 3)), dtype=F32),
        "b": torch.tensor(rng.standard_normal(3), dtype=F32),
    }
    return dict(weights=weights, scale=torch.tensor(rng.random(3) + 0.5, dtype=F32), steps=3)


LADDER26_CASES = [
    hidden(
        "train_bpe_literal_specials_crlf",
        "train_bpe",
        "run_train_bpe_on_text",
        1501,
        _ladder26_literal_corpus,
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "train_bpe_token_ids",
        "train_bpe",
        "run_train_bpe_token_ids",
        1505,
        train_bpe_case(60, 330, [EOT, "<|pad|>"]),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "tokenizer_iterable_is_lazy",
        "tokenizer",
        "run_tokenizer_encode_iterable_lazily",
        1506,
        tokenizer_case(400, [EOT]),
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "checkpoint_buffers_and_strict_load",
        "checkpoint",
        "run_checkpoint_checks",
        1507,
        _ladder26_checkpoint,
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "train_bpe_pairs_run_out",
        "train_bpe",
        "run_train_bpe_on_text",
        1502,
        _ladder26_runs_out,
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "tokenizer_renumbered_vocabulary",
        "tokenizer",
        "run_tokenizer_encode",
        1503,
        _ladder26_renumbered,
        floor=EXACT,
        out_dtype=I64,
    ),
    hidden(
        "tokenizer_iterable_newline_runs",
        "tokenizer",
        "run_tokenizer_encode_iterable",
        1504,
        _ladder26_newline_runs,
        floor=EXACT,
        out_dtype=I64,
    ),
]
HIDDEN_CASES += LADDER26_CASES
CASES += LADDER26_CASES
BY_NAME.update({c.name: c for c in LADDER26_CASES})
