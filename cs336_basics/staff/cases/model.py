"""The transformer block and the language model."""

from functools import partial

from cs336_basics.staff.builders import block_ablation_case, block_case, lm_ablation_case, lm_cached_case, lm_case
from cs336_basics.staff.cases.case import BF16, F64, Case

transformer_block = partial(Case, component="block", adapter="run_transformer_block")
transformer_lm = partial(Case, component="lm", adapter="run_transformer_lm")
block_ablation = partial(Case, component="block", adapter="run_transformer_block_ablation")
lm_ablation = partial(Case, component="lm", adapter="run_transformer_lm_ablation")
lm_cached = partial(Case, component="lm", adapter="run_transformer_lm_cached")

CASES = [
    # block: CS336's pre-norm layer; grouped-query with a sequence shorter than max_seq_len
    transformer_block("block", seed=34, make=block_case(4, 12, 64, 4, 128, 16, 10000.0), floor=6.7e-7),
    transformer_block(
        "block_gqa_short", seed=35, make=block_case(2, 7, 64, 4, 96, 32, 10000.0, num_kv_heads=2), floor=5.8e-7
    ),
    transformer_block("block_f64", seed=123, make=block_case(2, 5, 48, 3, 96, 16, 500000.0), floor=6.2e-16, dtype=F64),
    transformer_block(
        "block_mqa_short_bf16",
        seed=124,
        make=block_case(1, 6, 32, 2, 64, 8, 1000.0, num_kv_heads=1),
        floor=0.0053,
        dtype=BF16,
    ),
    # CS336's ablations: post-norm with a SiLU FFN (an eps of 0.5 against activations of mean
    # square 4: the block's eps must reach its norms), and no norm at all
    block_ablation(
        "block_post_norm_ungated_eps",
        seed=182,
        make=block_ablation_case(2, 6, 32, 4, 64, "post", "silu", 0.5),
        floor=5.9e-7,
    ),
    block_ablation(
        "block_no_norm_bf16",
        seed=183,
        make=block_ablation_case(3, 5, 32, 2, 48, "none", "swiglu", 1e-5, num_kv_heads=1),
        floor=2.2e-2,
        dtype=BF16,
    ),
    # witness (tests/staff/test_argument_flow.py): a block that builds its norms without `eps`,
    # calls its attention without `token_positions` or `attention_mask`, or builds its RoPE
    # with another head size (the cases above all have d_k = 16) fails here
    transformer_block(
        "block_eps_positions_padding",
        seed=191,
        make=block_case(2, 7, 48, 6, 96, 24, 10000.0, eps=0.5, positions="shuffled", padding=True),
        floor=3.7e-7,
    ),
    # hidden: multi-query, odd d_ff; a full-length bfloat16 sequence
    transformer_block(
        "block_mqa_odd",
        hidden=True,
        seed=1131,
        make=block_case(3, 5, 48, 4, 100, 8, 10000.0, num_kv_heads=1),
        floor=5.4e-7,
    ),
    transformer_block(
        "block_bf16", hidden=True, seed=1132, make=block_case(2, 8, 32, 2, 64, 8, 10000.0), floor=5.2e-3, dtype=BF16
    ),
    block_ablation(
        "block_pre_norm_ungated_f64",
        hidden=True,
        seed=1185,
        make=block_ablation_case(2, 7, 48, 3, 96, "pre", "silu", 0.25),
        floor=4.8e-16,
        dtype=F64,
    ),
    # lm: 2 layers, untied head, input shorter than the context; tied head (SmolLM2) with GQA
    transformer_lm("lm", seed=36, make=lm_case(4, 12, 100, 16, 64, 2, 4, 128), floor=1.6e-6),
    transformer_lm(
        "lm_tied_head_gqa", seed=37, make=lm_case(2, 9, 80, 32, 64, 2, 4, 96, num_kv_heads=2, tie=True), floor=1.7e-6
    ),
    transformer_lm(
        "lm_f64", seed=125, make=lm_case(2, 6, 50, 16, 32, 1, 2, 64, rope_theta=500000.0), floor=1.3e-15, dtype=F64
    ),
    transformer_lm(
        "lm_three_layers_bf16",
        seed=126,
        make=lm_case(1, 8, 40, 8, 32, 3, 2, 64, rope_theta=1000.0),
        floor=0.019,
        dtype=BF16,
    ),
    # the model's ablations: post-norm without positions (NoPE), eps 0.25; no norm, SiLU FFN
    lm_ablation(
        "lm_post_norm_nope_eps",
        seed=184,
        make=lm_ablation_case(2, 7, 40, 32, 2, 4, 64, "post", "none", "swiglu", 0.25),
        floor=9.3e-7,
    ),
    lm_ablation(
        "lm_no_norm_ungated_f64",
        seed=185,
        make=lm_ablation_case(2, 6, 30, 16, 2, 2, 48, "none", "rope", "silu", 1e-5),
        floor=8.4e-16,
        dtype=F64,
    ),
    # generation's way of running the model: a prefill then one token a call, a cache per
    # layer; a left-padded batch with its mask and each sequence's own positions
    lm_cached("lm_cached_gqa", seed=186, make=lm_cached_case(2, 7, 50, 32, 2, 4, 64, 3, num_kv_heads=2), floor=8.1e-7),
    lm_cached(
        "lm_cached_padded_bf16",
        seed=187,
        make=lm_cached_case(3, 6, 40, 32, 2, 2, 48, 2, padded=True),
        floor=2e-2,
        dtype=BF16,
    ),
    # witness (test_argument_flow.py): a language model that builds its layers or final norm
    # without `eps`, or calls its layers without `token_positions` or `attention_mask`, fails here
    transformer_lm(
        "lm_eps_positions_padding",
        seed=192,
        make=lm_case(2, 8, 40, 24, 32, 2, 4, 64, eps=0.25, positions="random", padding=True),
        floor=1.2e-6,
    ),
    # hidden: one layer, odd vocabulary, the whole context; three layers, tied, multi-query, bfloat16
    transformer_lm(
        "lm_one_layer_full_context", hidden=True, seed=1141, make=lm_case(3, 8, 37, 8, 32, 1, 2, 64), floor=9.1e-7
    ),
    transformer_lm(
        "lm_tied_mqa_bf16",
        hidden=True,
        seed=1142,
        make=lm_case(2, 6, 50, 16, 48, 3, 4, 100, num_kv_heads=1, tie=True),
        floor=2.8e-2,
        dtype=BF16,
    ),
    lm_cached(
        "lm_cached_padded_f64",
        hidden=True,
        seed=1186,
        make=lm_cached_case(4, 8, 30, 16, 1, 2, 32, 4, padded=True),
        floor=1.1e-15,
        dtype=F64,
    ),
]
