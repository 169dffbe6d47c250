"""The transformer block and the language model: the builders of their inputs (the language model's
weights too, which generation's builders use), then their cases and what they grade of the public
tests, then their mistakes (as forward functions of the modules)."""

from functools import partial

import torch
from torch import Tensor

from cs336_basics.nn import TransformerBlock, TransformerLM
from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.attention import draw_positions
from cs336_basics.staff.cases.case import BF16, F64, Case
from cs336_basics.staff.cases.draw import Make, Rng, linear_weight, randint, randn
from cs336_basics.staff.cases.mha import attn_weights, left_padding
from cs336_basics.staff.mistakes import mistake


def _block_weights(rng: Rng, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int, prefix: str = "") -> dict:
    attn = attn_weights(rng, d_model, num_heads, num_kv_heads)
    return {
        f"{prefix}ln1.weight": randn(rng, d_model, std=0.5, mean=1.0),
        f"{prefix}attn.q_proj.weight": attn["q_proj_weight"],
        f"{prefix}attn.k_proj.weight": attn["k_proj_weight"],
        f"{prefix}attn.v_proj.weight": attn["v_proj_weight"],
        f"{prefix}attn.output_proj.weight": attn["o_proj_weight"],
        f"{prefix}ln2.weight": randn(rng, d_model, std=0.5, mean=1.0),
        f"{prefix}ffn.w1.weight": linear_weight(rng, d_ff, d_model),
        f"{prefix}ffn.w2.weight": linear_weight(rng, d_model, d_ff),
        f"{prefix}ffn.w3.weight": linear_weight(rng, d_ff, d_model),
    }


def block_case(
    batch: int,
    seq: int,
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    num_kv_heads: int | None = None,
    eps: float | None = None,
    positions: str = "none",
    padding: bool = False,
) -> Make:
    """eps, token_positions (draw_positions' kinds) and a padding mask (padding_mask) when asked."""

    def make(rng):
        kw = dict(
            d_model=d_model,
            num_heads=num_heads,
            d_ff=d_ff,
            max_seq_len=max_seq_len,
            theta=theta,
            weights=_block_weights(rng, d_model, num_heads, num_kv_heads or num_heads, d_ff),
            in_features=randn(rng, batch, seq, d_model, std=2.0),
        )
        return kw | _sequence_options(rng, batch, seq, max_seq_len, eps, positions, padding)

    return make


def padding_mask(rng: Rng, batch: int, seq: int) -> Tensor:
    """(batch, seq) bools, False (a key to hide) with probability 1/4, never key 0: every query
    still sees a key through the causal mask."""
    mask = torch.from_numpy(rng.random((batch, seq)) >= 0.25)
    mask[:, 0] = True
    return mask


def _sequence_options(rng: Rng, batch: int, seq: int, max_seq_len: int, eps, positions: str, padding: bool) -> dict:
    """The block's and the language model's optional arguments, those asked for only."""
    kw = {} if eps is None else {"eps": eps}
    pos = draw_positions(rng, (batch,), seq, max_seq_len, positions)
    if pos is not None:
        kw["token_positions"] = pos
    if padding:
        kw["attention_mask"] = padding_mask(rng, batch, seq)
    return kw


def lm_weights(
    rng: Rng, vocab_size: int, d_model: int, num_layers: int, num_heads: int, num_kv_heads: int, d_ff: int, tie: bool
) -> dict:
    w = {"token_embeddings.weight": randn(rng, vocab_size, d_model)}
    for i in range(num_layers):
        w.update(_block_weights(rng, d_model, num_heads, num_kv_heads, d_ff, prefix=f"layers.{i}."))
    w["ln_final.weight"] = randn(rng, d_model, std=0.5, mean=1.0)
    if not tie:  # tied (SmolLM2): the head is token_embeddings.weight
        w["lm_head.weight"] = linear_weight(rng, vocab_size, d_model) * 4.0  # logits O(1), far from uniform
    return w


def lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta) -> dict:
    return dict(
        vocab_size=vocab_size,
        context_length=context_length,
        d_model=d_model,
        num_layers=num_layers,
        num_heads=num_heads,
        d_ff=d_ff,
        rope_theta=rope_theta,
    )


def lm_case(
    batch: int,
    seq: int,
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float = 10000.0,
    num_kv_heads: int | None = None,
    tie: bool = False,
    eps: float | None = None,
    positions: str = "none",
    padding: bool = False,
) -> Make:
    """eps, token_positions (draw_positions' kinds) and a padding mask (padding_mask) when asked."""

    def make(rng):
        w = lm_weights(rng, vocab_size, d_model, num_layers, num_heads, num_kv_heads or num_heads, d_ff, tie)
        ids = randint(rng, 0, vocab_size, (batch, seq))
        ids.view(-1)[:2] = torch.tensor([0, vocab_size - 1])  # both ends of the vocabulary
        return dict(
            **lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta),
            weights=w,
            in_indices=ids,
            **_sequence_options(rng, batch, seq, context_length, eps, positions, padding),
        )

    return make


def _ablated(weights: dict, norm: str, ffn: str) -> dict:
    """The weights of an ablated block or model: no RMSNorm gains with norm "none", no w3 with ffn "silu"."""
    dropped = ("ln1.weight", "ln2.weight", "ln_final.weight") if norm == "none" else ()
    dropped += ("ffn.w3.weight",) if ffn == "silu" else ()
    return {k: v for k, v in weights.items() if not k.endswith(dropped)}


def block_ablation_case(
    batch: int, seq: int, d_model: int, num_heads: int, d_ff: int, norm: str, ffn: str, eps: float,
    num_kv_heads: int | None = None,
) -> Make:  # fmt: skip
    """run_transformer_block_ablation: CS336's ablations of the block, RMSNorm eps given."""

    def make(rng):
        weights = _block_weights(rng, d_model, num_heads, num_kv_heads or num_heads, d_ff)
        return dict(d_model=d_model, num_heads=num_heads, d_ff=d_ff, max_seq_len=2 * seq, theta=10000.0,
                    weights=_ablated(weights, norm, ffn), in_features=randn(rng, batch, seq, d_model, std=2.0),
                    norm=norm, ffn=ffn, eps=eps)  # fmt: skip

    return make


def lm_ablation_case(
    batch: int, seq: int, vocab_size: int, d_model: int, num_layers: int, num_heads: int, d_ff: int,
    norm: str, position: str, ffn: str, eps: float,
) -> Make:  # fmt: skip
    """run_transformer_lm_ablation: CS336's ablations of the model (untied head, context 2 seq)."""

    def make(rng):
        kw = lm_case(batch, seq, vocab_size, 2 * seq, d_model, num_layers, num_heads, d_ff)(rng)
        return dict(kw, weights=_ablated(kw["weights"], norm, ffn), norm=norm, position=position, ffn=ffn, eps=eps)

    return make


def lm_cached_case(
    batch: int, seq: int, vocab_size: int, d_model: int, num_layers: int, num_heads: int, d_ff: int,
    prefill_length: int, num_kv_heads: int | None = None, padded: bool = False,
) -> Make:  # fmt: skip
    """run_transformer_lm_cached: a prefill then one token a call; padded: a left-padded batch
    with its attention mask and each sequence's own positions."""

    def make(rng):
        kw = lm_case(batch, seq, vocab_size, 2 * seq, d_model, num_layers, num_heads, d_ff,
                     num_kv_heads=num_kv_heads)(rng)  # fmt: skip
        kw["prefill_length"] = prefill_length
        if padded:
            kw["attention_mask"], kw["token_positions"] = left_padding(rng, (batch,), seq)
        return kw

    return make


transformer_block = partial(Case, component="block", adapter="run_transformer_block")
transformer_lm = partial(Case, component="lm", adapter="run_transformer_lm")
block_ablation = partial(Case, component="block", adapter="run_transformer_block_ablation")
lm_ablation = partial(Case, component="lm", adapter="run_transformer_lm_ablation")
lm_cached = partial(Case, component="lm", adapter="run_transformer_lm_cached")

CASES = [
    # block: CS336's pre-norm layer; grouped-query with a sequence shorter than max_seq_len
    transformer_block("block", seed=34, make=block_case(4, 12, 64, 4, 128, 16, 10000.0), floor=7.7e-7),
    transformer_block(
        "block_gqa_short", seed=35, make=block_case(2, 7, 64, 4, 96, 32, 10000.0, num_kv_heads=2), floor=7.5e-7
    ),
    transformer_block("block_f64", seed=123, make=block_case(2, 5, 48, 3, 96, 16, 500000.0), floor=6.2e-16, dtype=F64),
    transformer_block(
        "block_mqa_short_bf16",
        seed=124,
        make=block_case(1, 6, 32, 2, 64, 8, 1000.0, num_kv_heads=1),
        floor=8.6e-3,
        dtype=BF16,
    ),
    # CS336's ablations: post-norm with a SiLU FFN (an eps of 0.5 against activations of mean
    # square 4: the block's eps must reach its norms), and no norm at all
    block_ablation(
        "block_post_norm_ungated_eps",
        seed=182,
        make=block_ablation_case(2, 6, 32, 4, 64, "post", "silu", 0.5),
        floor=1.6e-6,
    ),
    block_ablation(
        "block_no_norm_bf16",
        seed=183,
        make=block_ablation_case(3, 5, 32, 2, 48, "none", "swiglu", 1e-5, num_kv_heads=1),
        floor=3.3e-2,
        dtype=BF16,
    ),
    # witness (tests/staff/test_argument_flow.py): a block that builds its norms without `eps`,
    # calls its attention without `token_positions` or `attention_mask`, or builds its RoPE
    # with another head size (the cases above all have d_k = 16) fails here
    transformer_block(
        "block_eps_positions_padding",
        seed=191,
        make=block_case(2, 7, 48, 6, 96, 24, 10000.0, eps=0.5, positions="shuffled", padding=True),
        floor=5.6e-7,
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
    transformer_lm("lm", seed=36, make=lm_case(4, 12, 100, 16, 64, 2, 4, 128), floor=2.5e-6),
    transformer_lm(
        "lm_tied_head_gqa", seed=37, make=lm_case(2, 9, 80, 32, 64, 2, 4, 96, num_kv_heads=2, tie=True), floor=1.9e-6
    ),
    transformer_lm(
        "lm_f64", seed=125, make=lm_case(2, 6, 50, 16, 32, 1, 2, 64, rope_theta=500000.0), floor=1.7e-15, dtype=F64
    ),
    transformer_lm(
        "lm_three_layers_bf16",
        seed=126,
        make=lm_case(1, 8, 40, 8, 32, 3, 2, 64, rope_theta=1000.0),
        floor=4.4e-2,
        dtype=BF16,
    ),
    # the model's ablations: post-norm without positions (NoPE), eps 0.25; no norm, SiLU FFN
    lm_ablation(
        "lm_post_norm_nope_eps",
        seed=184,
        make=lm_ablation_case(2, 7, 40, 32, 2, 4, 64, "post", "none", "swiglu", 0.25),
        floor=2.1e-6,
    ),
    lm_ablation(
        "lm_no_norm_ungated_f64",
        seed=185,
        make=lm_ablation_case(2, 6, 30, 16, 2, 2, 48, "none", "rope", "silu", 1e-5),
        floor=2.0e-15,
        dtype=F64,
    ),
    # generation's way of running the model: a prefill then one token a call, a cache per
    # layer; a left-padded batch with its mask and each sequence's own positions
    lm_cached("lm_cached_gqa", seed=186, make=lm_cached_case(2, 7, 50, 32, 2, 4, 64, 3, num_kv_heads=2), floor=1.6e-6),
    lm_cached(
        "lm_cached_padded_bf16",
        seed=187,
        make=lm_cached_case(3, 6, 40, 32, 2, 2, 48, 2, padded=True),
        floor=3.0e-2,
        dtype=BF16,
    ),
    # witness (test_argument_flow.py): a language model that builds its layers or final norm
    # without `eps`, or calls its layers without `token_positions` or `attention_mask`, fails here
    transformer_lm(
        "lm_eps_positions_padding",
        seed=192,
        make=lm_case(2, 8, 40, 24, 32, 2, 4, 64, eps=0.25, positions="random", padding=True),
        floor=1.4e-6,
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


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "block": {
        "test_block_matches_fixture": ("block", "block_gqa_short", "block_f64", "block_mqa_short_bf16"),
        "test_block_adapter_matches_builtins": ("block_f64", "block_mqa_odd"),
        "test_block_state_dict_keys_follow_cs336": ("block",),
        "test_block_passes_its_eps_to_both_norms": ("block_post_norm_ungated_eps", "block_eps_positions_padding"),
        "test_block_ablation_matches_its_formula_in_builtins": ("block_post_norm_ungated_eps", "block_no_norm_bf16"),
        "test_block_without_norms_has_no_norm_weights": ("block_no_norm_bf16",),
        "test_block_ungated_ffn_has_two_d_model_by_d_ff_matrices": (
            "block_post_norm_ungated_eps",
            "block_pre_norm_ungated_f64",
        ),
        "test_block_output_has_the_input_shape_and_dtype": ("block", "block_f64"),
        "test_block_with_sub_layers_writing_zero_is_the_identity": ("block", "block_f64"),
        "test_block_first_sub_layer_alone_is_x_plus_attn_of_ln1": ("block", "block_f64"),
        "test_block_ffn_sub_layer_alone_is_x_plus_ffn_of_ln2": ("block", "block_f64"),
        "test_block_ffn_reads_and_adds_to_the_first_residual_sum": ("block", "block_f64"),
        "test_block_is_causal": ("block", "block_gqa_short"),
        "test_block_passes_eps_to_both_norms": ("block_eps_positions_padding", "block_post_norm_ungated_eps"),
        "test_block_passes_token_positions_to_attn": ("block_eps_positions_padding",),
        "test_block_padding_mask_hides_the_masked_keys": ("block_eps_positions_padding",),
        "test_block_post_norm_normalises_each_residual_sum": ("block_post_norm_ungated_eps",),
        "test_block_without_norms_is_two_plain_residual_sums": ("block_no_norm_bf16",),
        "test_block_ungated_ffn_is_w2_act_w1": ("block_pre_norm_ungated_f64", "block_post_norm_ungated_eps"),
    },
    "lm": {
        "test_lm_matches_fixture": ("lm", "lm_tied_head_gqa", "lm_f64", "lm_three_layers_bf16"),
        "test_lm_adapter_takes_cs336_names_and_a_sequence_shorter_than_the_context": ("lm", "lm_tied_head_gqa"),
        "test_lm_tied_model_has_no_head_in_its_state_dict": ("lm_tied_head_gqa", "lm_tied_mqa_bf16"),
        "test_lm_cached_prefix_gives_the_same_logits": ("lm_cached_gqa", "lm_cached_padded_f64"),
        "test_lm_nope_matches_its_formula_in_builtins_without_rotation": ("lm_post_norm_nope_eps",),
        "test_lm_nope_has_no_position_module_and_the_same_weights": ("lm_post_norm_nope_eps",),
        "test_lm_passes_its_eps_to_every_norm": ("lm_post_norm_nope_eps", "lm_eps_positions_padding"),
        "test_lm_runs_every_layer_at_the_given_token_positions": ("lm_eps_positions_padding",),
        "test_lm_ungated_ffn_reaches_every_layer": ("lm_no_norm_ungated_f64",),
        "test_lm_without_norms_has_no_norm_weights": ("lm_no_norm_ungated_f64",),
        "test_lm_logits_have_shape_batch_seq_vocab": ("lm", "lm_f64"),
        "test_lm_with_silent_layers_is_the_tied_head_on_normalised_inputs": ("lm_tied_head_gqa", "lm_tied_mqa_bf16"),
        "test_lm_untied_head_is_lm_head_weight": ("lm", "lm_f64"),
        "test_lm_runs_every_layer_in_order": ("lm_f64", "lm_three_layers_bf16"),
        "test_lm_is_causal": ("lm", "lm_f64"),
        "test_lm_passes_eps_to_every_norm": ("lm_eps_positions_padding", "lm_post_norm_nope_eps"),
        "test_lm_passes_token_positions_to_every_layer": ("lm_eps_positions_padding",),
        "test_lm_padding_mask_hides_the_masked_keys": ("lm_eps_positions_padding", "lm_cached_padded_f64"),
        "test_lm_cached_prefix_then_one_token_a_call_gives_the_same_logits": ("lm_cached_gqa", "lm_cached_padded_f64"),
        "test_lm_without_norms_has_no_final_norm_either": ("lm_no_norm_ungated_f64",),
        "test_lm_nope_rotates_nothing": ("lm_post_norm_nope_eps",),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_block_unknown_ablation_names_the_setting": "the given argument check of TransformerBlock",
    "test_lm_loads_meta_names": "the given renaming (nn.convert)",
    "test_lm_input_longer_than_the_context_raises": "the given argument check (_checks.model_inputs)",
    "test_lm_unknown_ablation_names_the_setting": "the given argument check of TransformerLMConfig",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- block (TransformerBlock.forward) ------------------------------------------------------------


@mistake(
    "block-post_norm",
    TransformerBlock,
    "forward",
    diagnosis="the decoder layer normalising after each residual sum (post-norm)",
)
def decoder_block_post_norm(block, x, token_positions=None, kv_cache=None, attention_mask=None):
    h = block.ln1(x + block.attn(x, token_positions, kv_cache, attention_mask))  # Vaswani et al. 2017
    return block.ln2(h + block.ffn(h))


@mistake(
    "block-no_first_residual",
    TransformerBlock,
    "forward",
    diagnosis="the decoder layer without the attention residual (h = attention(ln1(x)), not x + attention(ln1(x)))",
)
def decoder_block_no_attention_residual(block, x, token_positions=None, kv_cache=None, attention_mask=None):
    h = block.attn(block.ln1(x), token_positions, kv_cache, attention_mask)
    return h + block.ffn(block.ln2(h))


@mistake(
    "block-ffn_reads_block_input",
    TransformerBlock,
    "forward",
    diagnosis="the decoder layer feeding ln2 the layer's input x instead of h = x + attention",
)
def decoder_block_ffn_reads_block_input(block, x, token_positions=None, kv_cache=None, attention_mask=None):
    h = x + block.attn(block.ln1(x), token_positions, kv_cache, attention_mask)
    return h + block.ffn(block.ln2(x))  # a parallel block by accident


@mistake("block-norms_swapped", TransformerBlock, "forward", diagnosis="the decoder layer with ln1 and ln2 swapped")
def decoder_block_norms_swapped(block, x, token_positions=None, kv_cache=None, attention_mask=None):
    h = x + block.attn(block.ln2(x), token_positions, kv_cache, attention_mask)
    return h + block.ffn(block.ln1(h))


@mistake(
    "block-second_residual_adds_input",
    TransformerBlock,
    "forward",
    diagnosis="the decoder layer's second residual adding the layer's input x instead of h = x + attention "
    "(x + FFN(Norm(h)))",
)
def decoder_block_second_residual_adds_input(block, x, token_positions=None, kv_cache=None, attention_mask=None):
    h = x + block.attn(block.ln1(x), token_positions, kv_cache, attention_mask)
    return x + block.ffn(block.ln2(h))


# ---- lm (TransformerLM.forward) ------------------------------------------------------------------


def _layers(model, in_indices, token_positions=None, kv_cache=None, attention_mask=None):
    """The reference's layers: positions after what the cache holds unless given, each layer's cache, the mask."""
    if token_positions is None:
        past = kv_cache[0].length if kv_cache else 0
        token_positions = torch.arange(past, past + in_indices.shape[-1], device=in_indices.device)
    x = model.token_embeddings(in_indices)
    for i, layer in enumerate(model.layers):
        x = layer(x, token_positions, kv_cache[i] if kv_cache else None, attention_mask)
    return x


def _head(model):
    return model.token_embeddings.weight if model.lm_head is None else model.lm_head.weight


@mistake(
    "lm-no_final_norm", TransformerLM, "forward", diagnosis="the language model without ln_final before the output head"
)
def lm_no_final_norm(model, in_indices, token_positions=None, kv_cache=None, attention_mask=None):
    return F.linear(_layers(model, in_indices, token_positions, kv_cache, attention_mask), _head(model))


@mistake(
    "lm-returns_probabilities",
    TransformerLM,
    "forward",
    diagnosis="the language model returning softmax probabilities instead of logits",
)
def lm_softmax_output(model, in_indices, token_positions=None, kv_cache=None, attention_mask=None):
    x = _layers(model, in_indices, token_positions, kv_cache, attention_mask)
    return F.softmax(F.linear(model.ln_final(x), _head(model)), -1)


@mistake(
    "lm-head_always_tied",
    TransformerLM,
    "forward",
    diagnosis="the language model using token_embeddings.weight as the output head even when lm_head.weight "
    "is given (untied)",
)
def lm_always_tied(model, in_indices, token_positions=None, kv_cache=None, attention_mask=None):
    # (positions starting at 1 instead of 0 would be no mistake: RoPE scores depend only on offsets)
    x = _layers(model, in_indices, token_positions, kv_cache, attention_mask)
    return F.linear(model.ln_final(x), model.token_embeddings.weight)
