"""Adapters: the `run_*` functions the tests call, with the names and parameters of Stanford
CS336 assignment 1 (v1.0.2), each wired to this package in a line or two. The stateless ones
call the kernel; the others build the module in the dtype and device of its weights (the FFN
block: of its input), load the given weights strictly (through
`cs336_basics.nn.convert.load_state_dict`) and call it. The graded scenarios (initialisation,
get_batch and checkpoint checks, multi-step procedures) are in tests/adapter_checks.py, which the
adapters call with this package's functions.
"""

# The checks first, before any code of cs336_basics runs. In the grader's worker this file is the
# module `adapters` and finds the grader's own adapter_checks already in sys.modules.
try:
    from . import adapter_checks as checks
except ImportError:
    import adapter_checks as checks

import io
import os
import tempfile
from collections.abc import Iterable
from typing import IO, Any, BinaryIO

import numpy.typing as npt
import torch
from jaxtyping import Bool, Float, Int, UInt8
from torch import Tensor

import cs336_basics.data as data
import cs336_basics.generation.generate as generation
import cs336_basics.generation.sampling as sampling
import cs336_basics.serialization as serialization
import cs336_basics.tokenizer.tensors as bpe_tensors
import cs336_basics.tokenizer.tokenizer as bpe_tokenizer
import cs336_basics.tokenizer.train_bpe as bpe_training
from cs336_basics import optim
from cs336_basics.nn import convert
from cs336_basics.nn import functional as F
from cs336_basics.nn.kv_cache import KVCache
from cs336_basics.nn.modules import (
    Embedding,
    FFNBlock,
    FFNBlockConfig,
    LayerNorm,
    Linear,
    MultiHeadSelfAttention,
    PositionWiseFFN,
    RMSNorm,
    RotaryPositionalEmbedding,
    SwiGLUFFN,
    TransformerBlock,
    TransformerLM,
    TransformerLMConfig,
)
from cs336_basics.nn.parallel import (
    ColumnParallelLinear,
    ParallelAttention,
    ParallelSwiGLUFFN,
    ParallelTransformerLM,
    RowParallelLinear,
    collectives,
    launch,
)


def _loaded(module: torch.nn.Module, state_dict: dict[str, Tensor]) -> torch.nn.Module:
    """`module` with exactly `state_dict` loaded; a missing, extra or misshapen key raises ValueError."""
    return convert.load_state_dict(module, state_dict)


def _like(t: Tensor) -> dict:
    return dict(device=t.device, dtype=t.dtype)


def run_linear(
    d_in: int,
    d_out: int,
    weights: Float[Tensor, " d_out d_in"],
    in_features: Float[Tensor, " ... d_in"],
) -> Float[Tensor, " ... d_out"]:
    return _loaded(Linear(d_in, d_out, **_like(weights)), {"weight": weights})(in_features)


def run_linear_with_bias(
    d_in: int,
    d_out: int,
    weights: Float[Tensor, " d_out d_in"],
    biases: Float[Tensor, " d_out"],
    in_features: Float[Tensor, " ... d_in"],
) -> Float[Tensor, " ... d_out"]:
    """Beyond CS336 (whose Linear has no bias): Linear(..., bias=True) with `biases` loaded."""
    linear = Linear(d_in, d_out, **_like(weights), bias=True)
    return _loaded(linear, {"weight": weights, "bias": biases})(in_features)


def run_embedding(
    vocab_size: int,
    d_model: int,
    weights: Float[Tensor, " vocab_size d_model"],
    token_ids: Int[Tensor, " ..."],
) -> Float[Tensor, " ... d_model"]:
    return _loaded(Embedding(vocab_size, d_model, **_like(weights)), {"weight": weights})(token_ids)


def run_linear_init_checks(d_in: int, d_out: int, seed: int) -> Int[Tensor, " 6"]:
    """Beyond CS336: Linear(d_in, d_out, bias=True) built with torch's generator seeded by `seed`;
    1 or 0 for each of adapter_checks.INIT_CHECKS, against N(0, 2 / (d_in + d_out)) (CS336 a1
    section 3.4.1)."""
    layer, in_float64 = checks.seeded(seed, lambda: (Linear(d_in, d_out, bias=True),
                                                      Linear(d_in, d_out, bias=True, dtype=torch.float64)))  # fmt: skip
    return checks.init_checks(layer.weight, (2 / (d_in + d_out)) ** 0.5, bias=layer.bias, in_float64=in_float64)


def run_embedding_init_checks(vocab_size: int, d_model: int, seed: int) -> Int[Tensor, " 6"]:
    """Beyond CS336: Embedding(vocab_size, d_model) built with torch's generator seeded by `seed`;
    1 or 0 for each of adapter_checks.INIT_CHECKS, against N(0, 1) (CS336 a1 section 3.4.1)."""
    embedding, in_float64 = checks.seeded(seed, lambda: (Embedding(vocab_size, d_model),
                                                          Embedding(vocab_size, d_model, dtype=torch.float64)))  # fmt: skip
    return checks.init_checks(embedding.weight, 1.0, in_float64=in_float64)


def run_rmsnorm_init_checks(d_model: int) -> Int[Tensor, " 6"]:
    """Beyond CS336: RMSNorm(d_model); 1 or 0 for each of adapter_checks.INIT_CHECKS (its gain 1)."""
    in_float64 = RMSNorm(d_model, dtype=torch.float64)
    return checks.init_checks(None, 1.0, gain=RMSNorm(d_model).weight, in_float64=in_float64)


def run_layernorm_init_checks(d_model: int) -> Int[Tensor, " 6"]:
    """Beyond CS336: LayerNorm(d_model, bias=True); 1 or 0 for each of adapter_checks.INIT_CHECKS
    (gain 1, bias 0)."""
    layer, in_float64 = LayerNorm(d_model, bias=True), LayerNorm(d_model, bias=True, dtype=torch.float64)
    return checks.init_checks(None, 1.0, bias=layer.bias, gain=layer.weight, in_float64=in_float64)


def run_swiglu(
    d_model: int,
    d_ff: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    w3_weight: Float[Tensor, " d_ff d_model"],
    in_features: Float[Tensor, " ... d_model"],
    activation: str = "silu",
) -> Float[Tensor, " ... d_model"]:
    """Beyond CS336: `activation` gates (GeGLU with "gelu"; Shazeer 2020)."""
    weights = {"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight}
    return _loaded(SwiGLUFFN(d_model, d_ff, activation=activation, **_like(w1_weight)), weights)(in_features)


def run_rmsnorm(
    d_model: int,
    eps: float,
    weights: Float[Tensor, " d_model"],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    return _loaded(RMSNorm(d_model, eps=eps, **_like(weights)), {"weight": weights})(in_features)


def run_silu(in_features: Float[Tensor, " ..."]) -> Float[Tensor, " ..."]:
    return F.silu(in_features)


def run_softmax(in_features: Float[Tensor, " ..."], dim: int) -> Float[Tensor, " ..."]:
    return F.softmax(in_features, dim=dim)


def run_scaled_dot_product_attention(
    Q: Float[Tensor, " ... queries d_k"],
    K: Float[Tensor, " ... keys d_k"],
    V: Float[Tensor, " ... values d_v"],
    mask: Bool[Tensor, " ... queries keys"] | None = None,
) -> Float[Tensor, " ... queries d_v"]:
    return F.scaled_dot_product_attention(Q, K, V, mask)


def _kv_heads(num_heads: int, d_model: int, k_proj_weight: Tensor) -> int:
    """Beyond CS336: fewer key/value rows than d_model mean grouped-query attention."""
    return max(1, k_proj_weight.shape[0] // (d_model // num_heads))


def _attn_weights(q, k, v, o) -> dict[str, Tensor]:
    return {"q_proj.weight": q, "k_proj.weight": k, "v_proj.weight": v, "output_proj.weight": o}


def run_multihead_self_attention(
    d_model: int,
    num_heads: int,
    q_proj_weight: Float[Tensor, " d_k d_in"],
    k_proj_weight: Float[Tensor, " d_k d_in"],
    v_proj_weight: Float[Tensor, " d_v d_in"],
    o_proj_weight: Float[Tensor, " d_model d_v"],
    in_features: Float[Tensor, " ... sequence_length d_in"],
) -> Float[Tensor, " ... sequence_length d_out"]:
    module = MultiHeadSelfAttention(
        d_model, num_heads, _kv_heads(num_heads, d_model, k_proj_weight), **_like(q_proj_weight)
    )
    return _loaded(module, _attn_weights(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight))(in_features)


def run_multihead_self_attention_with_rope(
    d_model: int,
    num_heads: int,
    max_seq_len: int,
    theta: float,
    q_proj_weight: Float[Tensor, " d_k d_in"],
    k_proj_weight: Float[Tensor, " d_k d_in"],
    v_proj_weight: Float[Tensor, " d_v d_in"],
    o_proj_weight: Float[Tensor, " d_model d_v"],
    in_features: Float[Tensor, " ... sequence_length d_in"],
    token_positions: Int[Tensor, " ... sequence_length"] | None = None,
) -> Float[Tensor, " ... sequence_length d_out"]:
    module = _rope_mha(
        d_model, num_heads, max_seq_len, theta, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight
    )
    return module(in_features, token_positions)


def _rope_mha(d_model, num_heads, max_seq_len, theta, q, k, v, o) -> MultiHeadSelfAttention:
    rope = RotaryPositionalEmbedding(theta, d_model // num_heads, max_seq_len, device=q.device)
    module = MultiHeadSelfAttention(d_model, num_heads, _kv_heads(num_heads, d_model, k), rope, **_like(q))
    return _loaded(module, _attn_weights(q, k, v, o))


def run_multihead_self_attention_cached(
    d_model: int,
    num_heads: int,
    max_seq_len: int,
    theta: float,
    q_proj_weight: Float[Tensor, " d_k d_in"],
    k_proj_weight: Float[Tensor, " d_k d_in"],
    v_proj_weight: Float[Tensor, " d_v d_in"],
    o_proj_weight: Float[Tensor, " d_model d_v"],
    in_features: Float[Tensor, " ... sequence_length d_in"],
    prefill_length: int,
    attention_mask: Bool[Tensor, " ... sequence_length"] | None = None,
    step_length: int = 1,
) -> Float[Tensor, " ... sequence_length d_out"]:
    """Beyond CS336: multi-head attention with RoPE run as generation runs it, with a KVCache:
    the first prefill_length tokens in one call, then step_length tokens a call (positions continue
    from the cache); attention_mask is False at padding keys, each call gets it up to its last key."""
    module = _rope_mha(
        d_model, num_heads, max_seq_len, theta, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight
    )
    cache = KVCache(in_features.shape[-2])

    def run(start: int, end: int) -> Tensor:
        mask = None if attention_mask is None else attention_mask[..., :end]
        return module(in_features[..., start:end, :], kv_cache=cache, attention_mask=mask)

    return checks.in_steps(run, in_features.shape[-2], prefill_length, step_length)


def run_rope(
    d_k: int,
    theta: float,
    max_seq_len: int,
    in_query_or_key: Float[Tensor, " ... sequence_length d_k"],
    token_positions: Int[Tensor, " ... sequence_length"],
) -> Float[Tensor, " ... sequence_length d_k"]:
    rope = RotaryPositionalEmbedding(theta, d_k, max_seq_len, device=in_query_or_key.device)
    return _loaded(rope, {})(in_query_or_key, token_positions)  # no weights: its tables are not state


def run_transformer_block(
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    weights: dict[str, Tensor],
    in_features: Float[Tensor, " batch sequence_length d_model"],
    eps: float = 1e-5,
    token_positions: Int[Tensor, " batch sequence_length"] | None = None,
    attention_mask: Bool[Tensor, " batch sequence_length"] | None = None,
) -> Float[Tensor, " batch sequence_length d_model"]:
    """Beyond CS336: the norms' eps; token_positions for RoPE (default 0, 1, ...); attention_mask,
    False at the keys to hide (padding)."""
    kv_heads = _kv_heads(num_heads, d_model, weights["attn.k_proj.weight"])
    block = TransformerBlock(
        d_model, num_heads, d_ff, max_seq_len, theta, kv_heads, eps=eps, **_like(weights["ln1.weight"])
    )
    return _loaded(block, weights)(in_features, token_positions, None, attention_mask)


def run_transformer_block_ablation(
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    weights: dict[str, Tensor],
    in_features: Float[Tensor, " batch sequence_length d_model"],
    norm: str,
    ffn: str,
    eps: float,
) -> Float[Tensor, " batch sequence_length d_model"]:
    """Beyond CS336: the block of CS336's ablations, norm "pre", "post" or "none", ffn "swiglu"
    or "silu" (W2 SiLU(W1 x)), with the RMSNorms' eps."""
    kv_heads = _kv_heads(num_heads, d_model, weights["attn.k_proj.weight"])
    block = TransformerBlock(d_model, num_heads, d_ff, max_seq_len, theta, kv_heads, eps=eps, norm=norm, ffn=ffn,
                             **_like(weights["attn.q_proj.weight"]))  # fmt: skip
    return _loaded(block, weights)(in_features)


def _lm(
    vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights, **settings
) -> TransformerLM:
    """Beyond CS336: no `lm_head.weight` in `weights` means tied embeddings; settings are
    TransformerLMConfig's (eps, norm, position, ffn)."""
    kv_heads = _kv_heads(num_heads, d_model, weights["layers.0.attn.k_proj.weight"])
    config = TransformerLMConfig(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta,
                                 kv_heads, tie_embeddings="lm_head.weight" not in weights, **settings)  # fmt: skip
    return _loaded(TransformerLM(config, **_like(weights["token_embeddings.weight"])), weights)


def run_transformer_lm(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    in_indices: Int[Tensor, " batch_size sequence_length"],
    eps: float = 1e-5,
    token_positions: Int[Tensor, " batch_size sequence_length"] | None = None,
    attention_mask: Bool[Tensor, " batch_size sequence_length"] | None = None,
) -> Float[Tensor, " batch_size sequence_length vocab_size"]:
    """Beyond CS336: no `lm_head.weight` in `weights` means tied embeddings; the norms' eps;
    token_positions (default 0, 1, ...); attention_mask, False at the keys to hide (padding)."""
    model = _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights, eps=eps)
    return model(in_indices, token_positions, None, attention_mask)


def run_transformer_lm_ablation(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    in_indices: Int[Tensor, " batch_size sequence_length"],
    norm: str,
    position: str,
    ffn: str,
    eps: float,
) -> Float[Tensor, " batch_size sequence_length vocab_size"]:
    """Beyond CS336: the language model of CS336's ablations: norm "pre", "post" or "none",
    position "rope" or "none" (NoPE), ffn "swiglu" or "silu", with the RMSNorms' eps."""
    settings = dict(norm=norm, position=position, ffn=ffn, eps=eps)
    return _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights, **settings)(
        in_indices
    )


def leaderboard_transformer_lm(
    config: dict[str, Any],
    weights: dict[str, Tensor],
    in_indices: Int[Tensor, " batch_size sequence_length"],
) -> Float[Tensor, " batch_size sequence_length vocab_size"]:
    """Beyond CS336, the grader's leaderboard: the logits of TransformerLM(TransformerLMConfig(**config))
    with `weights` loaded, `config` every field of the run's configuration (dataclasses.asdict), so
    that no setting (an ablation, eps, the norms' kind) is left to a default."""
    model = TransformerLM(TransformerLMConfig(**config), **_like(weights["token_embeddings.weight"]))
    return _loaded(model, weights)(in_indices)


def run_transformer_lm_cached(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    in_indices: Int[Tensor, " batch_size sequence_length"],
    prefill_length: int,
    attention_mask: Bool[Tensor, " batch_size sequence_length"] | None = None,
    token_positions: Int[Tensor, " batch_size sequence_length"] | None = None,
) -> Float[Tensor, " batch_size sequence_length vocab_size"]:
    """Beyond CS336: the logits of the language model run as generation runs it, one KVCache per
    layer: the first prefill_length tokens in one call, then one token a call. A batch of
    left-padded sequences passes attention_mask (False at padding) and token_positions (each
    sequence's own count); each call gets the mask up to its last key and its tokens' positions."""
    model = _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights)
    caches = [KVCache(in_indices.shape[-1]) for _ in range(num_layers)]

    def run(start: int, end: int) -> Tensor:
        mask = None if attention_mask is None else attention_mask[..., :end]
        positions = None if token_positions is None else token_positions[..., start:end]
        return model(in_indices[..., start:end], positions, caches, mask)

    return checks.in_steps(run, in_indices.shape[-1], prefill_length)


def run_generate(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    prompt_ids: Int[Tensor, " prompt_length"],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    eos_token_id: int | None = None,
    seed: int = 0,
    use_cache: bool = True,
) -> Int[Tensor, " new_tokens"]:
    """Beyond CS336: the token ids generation appends to prompt_ids: greedy (temperature 0) or
    sampled with a generator seeded with `seed`, stopping after eos_token_id if given; with
    use_cache=False, the whole sequence recomputed at every step."""
    model = _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights)
    eos = () if eos_token_id is None else (eos_token_id,)
    tokens = generation.generate(
        model, prompt_ids.tolist(), max_new_tokens, temperature, top_p, eos, _seeded(seed), use_cache=use_cache
    )
    return torch.tensor(list(tokens), dtype=torch.long)


def run_generate_batch(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    weights: dict[str, Tensor],
    prompt_ids: Int[Tensor, " batch width"],
    prompt_lengths: Int[Tensor, " batch"],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    eos_token_id: int | None = None,
    seed: int = 0,
) -> Int[Tensor, " batch max_new_tokens"]:
    """Beyond CS336: generate_batch on the prompts prompt_ids[i, :prompt_lengths[i]], row i sampled
    with a generator seeded with seed + i; each row's new ids, padded with -1 to max_new_tokens."""
    model = _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights)
    eos = () if eos_token_id is None else (eos_token_id,)
    prompts = [row[:n].tolist() for row, n in zip(prompt_ids, prompt_lengths.tolist(), strict=True)]
    generators = [_seeded(seed + i) for i in range(len(prompts))]
    rows = generation.generate_batch(model, prompts, max_new_tokens, temperature, top_p, eos, generators)
    return torch.tensor([row + [-1] * (max_new_tokens - len(row)) for row in rows], dtype=torch.long)


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def run_top_p_filter(probs: Float[Tensor, " ... vocab"], top_p: float) -> Float[Tensor, " ... vocab"]:
    """Beyond CS336: the nucleus of each row of probs, renormalised."""
    return sampling.top_p_filter(probs, top_p)


def run_next_token_distribution(
    logits: Float[Tensor, " ... vocab"], temperature: float, top_p: float
) -> Float[Tensor, " ... vocab"]:
    """Beyond CS336: the probabilities a token is drawn from at this temperature and top_p."""
    return sampling.next_token_distribution(logits, temperature, top_p)


def run_sample_next_token(
    logits: Float[Tensor, " ... vocab"], temperature: float, top_p: float, seed: int
) -> Int[Tensor, " ..."]:
    """Beyond CS336: one token id per row of logits, drawn with a generator seeded with `seed`."""
    return sampling.sample_next_token(logits, temperature, top_p, _seeded(seed))


def run_cross_entropy(
    inputs: Float[Tensor, " batch_size vocab_size"], targets: Int[Tensor, " batch_size"]
) -> Float[Tensor, ""]:
    """Beyond CS336: any leading dimensions, inputs (..., vocab_size) with targets (...)."""
    return F.cross_entropy(inputs, targets)


def run_gradient_clipping(parameters: Iterable[torch.nn.Parameter], max_l2_norm: float) -> Tensor | None:
    """Beyond CS336: returns what gradient_clipping returns (this package's: the norm before clipping)."""
    return optim.gradient_clipping(parameters, max_l2_norm)


def get_adamw_cls() -> Any:
    return optim.AdamW


def run_get_lr_cosine_schedule(
    it: int,
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
):
    return optim.get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)


def run_get_batch(
    dataset: npt.NDArray, batch_size: int, context_length: int, device: str
) -> tuple[Int[Tensor, " batch_size context_length"], Int[Tensor, " batch_size context_length"]]:
    return data.get_batch(dataset, batch_size, context_length, device)


def run_save_checkpoint(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    iteration: int,
    out: str | os.PathLike | BinaryIO | IO[bytes],
):
    serialization.save_checkpoint(model, optimizer, iteration, out)


def run_load_checkpoint(
    src: str | os.PathLike | BinaryIO | IO[bytes],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
) -> int:
    return serialization.load_checkpoint(src, model, optimizer)


# Beyond CS336 v1.0.2: the rest of this package's components.


def run_gelu(in_features: Float[Tensor, " ..."], approximate: str = "none") -> Float[Tensor, " ..."]:
    return F.gelu(in_features, approximate=approximate)


def run_layernorm(
    d_model: int,
    eps: float,
    weights: Float[Tensor, " d_model"],
    biases: Float[Tensor, " d_model"],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    module = LayerNorm(d_model, eps=eps, bias=True, **_like(weights))
    return _loaded(module, {"weight": weights, "bias": biases})(in_features)


def run_positionwise_feedforward_without_biases(
    d_model: int,
    d_ff: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    in_features: Float[Tensor, " ... d_model"],
    activation: str = "gelu",
) -> Float[Tensor, " ... d_model"]:
    """Beyond CS336: PositionWiseFFN(..., bias=False), its two weights loaded (no bias parameters)."""
    module = PositionWiseFFN(d_model, d_ff, activation=activation, bias=False, **_like(w1_weight))
    return _loaded(module, {"w1.weight": w1_weight, "w2.weight": w2_weight})(in_features)


def run_layernorm_without_bias(
    d_model: int, eps: float, weights: Float[Tensor, " d_model"], in_features: Float[Tensor, " ... d_model"]
) -> Float[Tensor, " ... d_model"]:
    """Beyond CS336: LayerNorm(d_model, eps, bias=False), its gain loaded (no bias parameter)."""
    return _loaded(LayerNorm(d_model, eps=eps, bias=False, **_like(weights)), {"weight": weights})(in_features)


def run_positionwise_feedforward(
    d_model: int,
    d_ff: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    b1: Float[Tensor, " d_ff"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    b2: Float[Tensor, " d_model"],
    in_features: Float[Tensor, " ... d_model"],
    activation: str = "gelu",
) -> Float[Tensor, " ... d_model"]:
    module = PositionWiseFFN(d_model, d_ff, activation=activation, bias=True, **_like(w1_weight))
    weights = {"w1.weight": w1_weight, "w1.bias": b1, "w2.weight": w2_weight, "w2.bias": b2}
    return _loaded(module, weights)(in_features)


def run_ffn_block(
    d_model: int,
    d_ff: int,
    weights: dict[str, Tensor],
    in_features: Float[Tensor, " ... d_model"],
    norm: str = "rmsnorm",
    ffn: str = "swiglu",
    activation: str = "silu",
    eps: float = 1e-5,
    bias: bool = False,
) -> Float[Tensor, " ... d_model"]:
    """x + FFN(Norm(x)); `weights` in Meta llama's names (`ffn_norm.weight`,
    `feed_forward.w1.weight`, ...; the block's own are `ln2.weight`, `ffn.w1.weight`, ...)."""
    config = FFNBlockConfig(d_model, d_ff, norm=norm, ffn=ffn, activation=activation, eps=eps, bias=bias)
    return convert.load_state_dict(FFNBlock(config, **_like(in_features)), weights, naming="meta")(in_features)


# Beyond CS336 v1.0.2: the kernels' backward passes, graded where a formula that computes the
# forward right can still compute the gradient wrong (NaN at extreme inputs or in masked rows).


def _input_grad(fn, in_features: Tensor, grad_output: Tensor) -> Tensor:
    """The gradient of fn(in_features) against grad_output, with respect to in_features."""
    x = in_features.detach().requires_grad_()
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(fn(x), x, grad_output)
    return grad


def run_silu_backward(in_features: Float[Tensor, " ..."], grad_output: Float[Tensor, " ..."]) -> Float[Tensor, " ..."]:
    return _input_grad(run_silu, in_features, grad_output)


def run_gelu_backward(
    in_features: Float[Tensor, " ..."], grad_output: Float[Tensor, " ..."], approximate: str = "none"
) -> Float[Tensor, " ..."]:
    return _input_grad(lambda x: run_gelu(x, approximate), in_features, grad_output)


def run_softmax_backward(
    in_features: Float[Tensor, " ..."], dim: int, grad_output: Float[Tensor, " ..."]
) -> Float[Tensor, " ..."]:
    return _input_grad(lambda x: run_softmax(x, dim), in_features, grad_output)


# Tensor parallelism (Megatron-LM, Shoeybi et al. 2019; Meta's llama FeedForward): each adapter
# starts a group of `world_size` processes on 127.0.0.1, gives every rank its shard of the full
# weights, and returns the whole output as one tensor (cs336_basics/nn/parallel/launch.py).


def run_column_parallel_linear(
    d_in: int,
    d_out: int,
    world_size: int,
    weights: Float[Tensor, " d_out d_in"],
    in_features: Float[Tensor, " ... d_in"],
    gather_output: bool = True,
) -> Float[Tensor, " ... d_out"]:
    make = launch.module_factory(ColumnParallelLinear, d_in=d_in, d_out=d_out, gather_output=gather_output)
    return launch.run_sharded(make, {"weight": weights}, in_features, world_size)


def run_row_parallel_linear(
    d_in: int,
    d_out: int,
    world_size: int,
    weights: Float[Tensor, " d_out d_in"],
    in_features: Float[Tensor, " ... d_in"],
) -> Float[Tensor, " ... d_out"]:
    make = launch.module_factory(RowParallelLinear, d_in=d_in, d_out=d_out, input_is_parallel=False)
    return launch.run_sharded(make, {"weight": weights}, in_features, world_size)


def run_parallel_swiglu(
    d_model: int,
    d_ff: int,
    world_size: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    w3_weight: Float[Tensor, " d_ff d_model"],
    in_features: Float[Tensor, " ... d_model"],
    activation: str = "silu",
) -> Float[Tensor, " ... d_model"]:
    weights = {"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight}
    factory = launch.module_factory(ParallelSwiGLUFFN, d_model=d_model, d_ff=d_ff, activation=activation)
    return launch.run_sharded(factory, weights, in_features, world_size)


def _parallel_attention_factory(d_model: int, num_heads: int, max_seq_len: int, theta: float, k_proj_weight: Tensor):
    """ParallelAttention's rank factory, its key/value heads from k_proj_weight's rows."""
    rope = RotaryPositionalEmbedding(theta, d_model // num_heads, max_seq_len)
    kv_heads = _kv_heads(num_heads, d_model, k_proj_weight)
    return launch.module_factory(
        ParallelAttention, d_model=d_model, num_heads=num_heads, num_kv_heads=kv_heads, rope=rope
    )


def run_parallel_attention(
    d_model: int,
    num_heads: int,
    max_seq_len: int,
    theta: float,
    world_size: int,
    q_proj_weight: Float[Tensor, " d_k d_in"],
    k_proj_weight: Float[Tensor, " d_k d_in"],
    v_proj_weight: Float[Tensor, " d_v d_in"],
    o_proj_weight: Float[Tensor, " d_model d_v"],
    in_features: Float[Tensor, " ... sequence_length d_in"],
    token_positions: Int[Tensor, " ... sequence_length"] | None = None,
) -> Float[Tensor, " ... sequence_length d_model"]:
    """Beyond CS336: run_multihead_self_attention_with_rope's attention split by head over
    world_size ranks (ParallelAttention, the key/value heads from k_proj_weight's rows)."""
    make = _parallel_attention_factory(d_model, num_heads, max_seq_len, theta, k_proj_weight)
    weights = _attn_weights(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight)
    return launch.run_sharded(make, weights, in_features, world_size, forward_args=(token_positions,))


def run_parallel_transformer_lm(
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float,
    world_size: int,
    weights: dict[str, Tensor],
    in_indices: Int[Tensor, " batch_size sequence_length"],
    eps: float = 1e-5,
    token_positions: Int[Tensor, " batch_size sequence_length"] | None = None,
    attention_mask: Bool[Tensor, " batch_size sequence_length"] | None = None,
) -> Float[Tensor, " batch_size sequence_length vocab_size"]:
    """Beyond CS336: run_transformer_lm's model (and options) split over world_size ranks
    (ParallelTransformerLM: heads and FFN hidden units)."""
    kv_heads = _kv_heads(num_heads, d_model, weights["layers.0.attn.k_proj.weight"])
    config = TransformerLMConfig(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta,
                                 kv_heads, tie_embeddings="lm_head.weight" not in weights, eps=eps)  # fmt: skip
    make = launch.module_factory(ParallelTransformerLM, config=config)
    return launch.run_sharded(
        make, weights, in_indices, world_size, forward_args=(token_positions, None, attention_mask)
    )


def _backward_output(x_grad: Tensor, grads: dict[str, Tensor]) -> Tensor:
    """x's gradient and then each weight's, flattened, in key order: one tensor for a case."""
    return torch.cat([x_grad.flatten(), *(grads[k].flatten() for k in sorted(grads))])


def run_row_parallel_linear_backward(
    d_in: int,
    d_out: int,
    world_size: int,
    weights: Float[Tensor, " d_out d_in"],
    in_features: Float[Tensor, " ... d_in"],
    grad_output: Float[Tensor, " ... d_out"],
) -> Float[Tensor, " n"]:
    """Beyond CS336: the gradients of sum(RowParallelLinear(x) * grad_output) on world_size ranks
    (the input scattered: its backward gathers), x's then the gathered weight's, flattened."""
    make = launch.module_factory(RowParallelLinear, d_in=d_in, d_out=d_out, input_is_parallel=False)
    return _backward_output(
        *launch.run_sharded_backward(make, {"weight": weights}, in_features, grad_output, world_size)
    )


def run_column_parallel_linear_backward(
    d_in: int,
    d_out: int,
    world_size: int,
    weights: Float[Tensor, " d_out d_in"],
    in_features: Float[Tensor, " ... d_in"],
    grad_output: Float[Tensor, " ... d_out"],
) -> Float[Tensor, " n"]:
    """Beyond CS336: the gradients of sum(ColumnParallelLinear(x) * grad_output) on world_size ranks,
    the output gathered (its backward keeps this rank's slice), x's then the gathered weight's."""
    make = launch.module_factory(ColumnParallelLinear, d_in=d_in, d_out=d_out, gather_output=True)
    return _backward_output(
        *launch.run_sharded_backward(make, {"weight": weights}, in_features, grad_output, world_size)
    )


def run_parallel_swiglu_backward(
    d_model: int,
    d_ff: int,
    world_size: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    w3_weight: Float[Tensor, " d_ff d_model"],
    in_features: Float[Tensor, " ... d_model"],
    grad_output: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " n"]:
    """Beyond CS336: the gradients of sum(ParallelSwiGLUFFN(x) * grad_output) on world_size ranks
    (f's backward all-reduces x's gradient, g's passes it through): x's gradient, then w1's,
    w2's and w3's gathered from the shards, flattened."""
    weights = {"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight}
    make = launch.module_factory(ParallelSwiGLUFFN, d_model=d_model, d_ff=d_ff)
    return _backward_output(*launch.run_sharded_backward(make, weights, in_features, grad_output, world_size))


def run_parallel_attention_backward(
    d_model: int,
    num_heads: int,
    max_seq_len: int,
    theta: float,
    world_size: int,
    q_proj_weight: Float[Tensor, " d_k d_in"],
    k_proj_weight: Float[Tensor, " d_k d_in"],
    v_proj_weight: Float[Tensor, " d_v d_in"],
    o_proj_weight: Float[Tensor, " d_model d_v"],
    in_features: Float[Tensor, " ... sequence_length d_in"],
    grad_output: Float[Tensor, " ... sequence_length d_model"],
) -> Float[Tensor, " n"]:
    """Beyond CS336: the gradients of sum(ParallelAttention(x) * grad_output) on world_size ranks
    (f's backward all-reduces x's gradient over the ranks' heads): x's gradient, then each
    projection's gathered from the shards, flattened."""
    make = _parallel_attention_factory(d_model, num_heads, max_seq_len, theta, k_proj_weight)
    weights = _attn_weights(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight)
    return _backward_output(*launch.run_sharded_backward(make, weights, in_features, grad_output, world_size))


def run_parallel_swiglu_collectives(
    d_model: int,
    d_ff: int,
    world_size: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    w3_weight: Float[Tensor, " d_ff d_model"],
    in_features: Float[Tensor, " ... d_model"],
    grad_output: Float[Tensor, " ... d_model"],
) -> Int[Tensor, " 2 kinds"]:
    """Beyond CS336: how many of each collective (collectives.KINDS, in that order) a rank of
    ParallelSwiGLUFFN issues in forward (row 0) and in backward (row 1)."""
    weights = {"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight}
    make = launch.module_factory(ParallelSwiGLUFFN, d_model=d_model, d_ff=d_ff)
    counts = launch.run_sharded_collectives(make, weights, in_features, grad_output, world_size)
    return torch.tensor([[counts[p].get(k, 0) for k in collectives.KINDS] for p in ("forward", "backward")])


# Beyond CS336 v1.0.2: drivers for the graded cases of the training components. Each runs the
# adapters above on tensors and returns one tensor, so a case is "inputs in, tensor out" like the
# others (the grader's worker runs them on the inputs it receives; the expected values stay out).


def run_adamw_steps(
    params: dict[str, Tensor],
    grads: dict[str, Tensor],
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    group_lrs: Tensor | None = None,
    resume_after: int = 0,
) -> Float[Tensor, " total_numel"]:
    """get_adamw_cls() on copies of `params` (one group; with group_lrs, one group per parameter
    in sorted name order with that lr), stepped once per gradient in grads[name] (steps, *shape),
    resumed from its state_dict after resume_after steps if > 0 (adapter_checks.adamw_steps). The
    parameters after the last step, flattened and concatenated in sorted name order."""
    return checks.adamw_steps(
        get_adamw_cls(), params, grads, lr, (beta1, beta2), eps, weight_decay, group_lrs, resume_after
    )


def run_lr_schedule_at(
    iterations: Int[Tensor, " n"],
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
) -> Float[Tensor, " n"]:
    """run_get_lr_cosine_schedule at each iteration, as a float64 tensor."""
    lrs = [
        run_get_lr_cosine_schedule(int(it), max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)
        for it in iterations.tolist()
    ]
    return torch.tensor([float(lr) for lr in lrs], dtype=torch.float64)


def run_gradient_clipping_of(
    grads: dict[str, Tensor],
    max_l2_norm: float,
    params_without_grad: int = 0,
    one_pass: bool = False,
    with_norm: bool = False,
) -> Float[Tensor, " total_numel"]:
    """run_gradient_clipping on parameters holding copies of `grads` (sorted by name), with
    `params_without_grad` more parameters that have none placed among them, given as a list (as
    an iterator that can be read once, like model.parameters(), if one_pass); the gradients after
    clipping, flattened and concatenated, then (with_norm) the norm it returned, in their dtype
    (adapter_checks.gradient_clipping_of)."""
    return checks.gradient_clipping_of(
        run_gradient_clipping, grads, max_l2_norm, params_without_grad, one_pass, with_norm
    )


# Beyond CS336 v1.0.2: the graded scenarios of get_batch and the checkpoint (a batch is random and
# a checkpoint is a file): each runs a fixed scenario of adapter_checks around the adapters above
# and returns one tensor, what it observed or the parameters training ended with.


def run_get_batch_checks(
    dataset: Int[Tensor, " n"],
    batch_size: int,
    context_length: int,
    num_batches: int,
    seed: int,
    token_dtype: str = "uint16",
) -> Int[Tensor, " 8"]:
    """Beyond CS336: writes `dataset` (distinct token ids) to a token file of `token_dtype`,
    opens it with np.memmap, calls run_get_batch num_batches times on it (global generators
    seeded with `seed`); 1 or 0 for each of adapter_checks.GET_BATCH_CHECKS."""
    return checks.get_batch_file_checks(
        run_get_batch, dataset, batch_size, context_length, num_batches, seed, token_dtype
    )


def run_get_batch_generator_checks(
    dataset: Int[Tensor, " n"], batch_size: int, context_length: int, num_batches: int, seed: int
) -> Int[Tensor, " 3"]:
    """Beyond CS336: get_batch(..., generator=g) num_batches times with g seeded by `seed`, twice
    (the global generators seeded differently each time); 1 or 0 for each of
    adapter_checks.GET_BATCH_GENERATOR_CHECKS. dataset holds distinct ids."""
    return checks.get_batch_generator_checks(data.get_batch, dataset, batch_size, context_length, num_batches, seed)


def run_checkpoint_resume(
    weights: dict[str, Tensor],
    gradients: dict[str, Tensor],
    steps_before: int,
    lr: float,
    weight_decay: float,
    to: str = "path",
) -> Float[Tensor, " n"]:
    """Beyond CS336: adapter_checks.momentum_optimizer on a model holding `weights`, given
    gradients[name][k] at step k: steps_before steps, run_save_checkpoint to a path (`to="path"`)
    or an in-memory file object (`to="file"`), run_load_checkpoint into a fresh model (all zeros)
    and a fresh optimizer, then the remaining steps. Returns the iteration the load returned, then
    every parameter (names sorted) flattened, in the weights' dtype: the same as training without
    the stop."""
    return checks.checkpoint_resume(
        run_save_checkpoint, run_load_checkpoint, weights, gradients, steps_before, lr, weight_decay, to
    )


def run_checkpoint_checks(weights: dict[str, Tensor], scale: Tensor, steps: int) -> Int[Tensor, " 7"]:
    """Beyond CS336: `steps` adapter_checks.momentum_optimizer steps (two param groups, the first's
    lr changed as a schedule would) on a model with a buffer, run_save_checkpoint to a file object,
    run_load_checkpoint into a fresh model and optimizer: 1 for each of
    adapter_checks.CHECKPOINT_CHECKS that holds."""
    return checks.checkpoint_checks(run_save_checkpoint, run_load_checkpoint, weights, scale, steps)


# Byte-level BPE (CS336 v1.0.2's adapters).


def run_train_bpe(
    input_path: str | os.PathLike,
    vocab_size: int,
    special_tokens: list[str],
    **kwargs,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    return bpe_training.train_bpe(input_path, vocab_size, special_tokens, **kwargs)


def get_tokenizer(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    special_tokens: list[str] | None = None,
) -> Any:
    return bpe_tokenizer.Tokenizer(vocab, merges, special_tokens)


# Beyond CS336: the same two on tensors (the fixture cases' inputs and outputs; encodings in
# cs336_basics/tokenizer/tensors.py).


def run_train_bpe_on_text(
    corpus: UInt8[Tensor, " n_bytes"], vocab_size: int, special_tokens: list[str]
) -> Int[Tensor, " vocab_size_plus_1 3"]:
    """run_train_bpe on a file holding `corpus` (UTF-8), its result as bpe_tensors.bpe_table."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(bpe_tensors.tensor_to_bytes(corpus))
        vocab, merges = run_train_bpe(path, vocab_size, special_tokens)
    return bpe_tensors.bpe_table(vocab, merges, special_tokens, vocab_size)


def run_train_bpe_token_ids(
    corpus: UInt8[Tensor, " n_bytes"], vocab_size: int, special_tokens: list[str]
) -> Int[Tensor, " vocab_size"]:
    """Beyond CS336: which token each id 0..vocab_size-1 of run_train_bpe's vocabulary holds, by
    its place in the convention (byte b is b, special token i is 256 + i, merge k's result is
    256 + len(special_tokens) + k; -1 for another token or a missing id). Correct: 0, 1, 2, ..."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(bpe_tensors.tensor_to_bytes(corpus))
        vocab, merges = run_train_bpe(path, vocab_size, special_tokens)
    order = [bytes([b]) for b in range(256)] + [s.encode("utf-8") for s in special_tokens] + [a + b for a, b in merges]
    place = {}
    for k, token in enumerate(order):
        place.setdefault(token, k)
    return torch.tensor([place.get(vocab.get(i), -1) for i in range(vocab_size)], dtype=torch.int64)


def _tokenizer(token_bytes: Tensor, token_offsets: Tensor, merges: Tensor, special_tokens: list[str] | None) -> Any:
    vocab = bpe_tensors.tensors_to_vocab(token_bytes, token_offsets)
    return get_tokenizer(vocab, bpe_tensors.tensor_to_merges(merges, vocab), special_tokens)


def run_tokenizer_encode(
    token_bytes: UInt8[Tensor, " total"],
    token_offsets: Int[Tensor, " vocab_size_plus_1"],
    merges: Int[Tensor, " num_merges 2"],
    special_tokens: list[str] | None,
    text: UInt8[Tensor, " n_bytes"],
) -> Int[Tensor, " n_bytes"]:
    """encode(text), laid over the text's bytes (bpe_tensors.token_starts)."""
    tokenizer = _tokenizer(token_bytes, token_offsets, merges, special_tokens)
    ids = tokenizer.encode(bpe_tensors.tensor_to_text(text))
    return bpe_tensors.token_starts(ids, tokenizer.vocab, bpe_tensors.tensor_to_bytes(text))


def run_tokenizer_encode_iterable(
    token_bytes: UInt8[Tensor, " total"],
    token_offsets: Int[Tensor, " vocab_size_plus_1"],
    merges: Int[Tensor, " num_merges 2"],
    special_tokens: list[str] | None,
    text: UInt8[Tensor, " n_bytes"],
) -> Int[Tensor, " n_bytes"]:
    """encode_iterable over the text's lines (as iterating over a file gives them), laid over the
    text's bytes (bpe_tensors.token_starts)."""
    tokenizer = _tokenizer(token_bytes, token_offsets, merges, special_tokens)
    lines = iter(bpe_tensors.tensor_to_text(text).splitlines(keepends=True))
    ids = list(tokenizer.encode_iterable(lines))
    return bpe_tensors.token_starts(ids, tokenizer.vocab, bpe_tensors.tensor_to_bytes(text))


def run_tokenizer_encode_iterable_lazily(
    token_bytes: UInt8[Tensor, " total"],
    token_offsets: Int[Tensor, " vocab_size_plus_1"],
    merges: Int[Tensor, " num_merges 2"],
    special_tokens: list[str] | None,
    text: UInt8[Tensor, " n_bytes"],
) -> Int[Tensor, " 2"]:
    """Beyond CS336: encode_iterable over the text's lines, two checks (1 if it holds): its first
    id came before the last line was read; all its ids equal encode's of the whole text."""
    tokenizer = _tokenizer(token_bytes, token_offsets, merges, special_tokens)
    whole = bpe_tensors.tensor_to_text(text)
    stream = io.StringIO(whole, newline="")  # its lines, read in C: no code of ours runs in the student's calls
    ids = tokenizer.encode_iterable(stream)
    first = next(iter(ids), None)
    early = stream.tell() < len(whole)
    rest = list(ids)
    return torch.tensor([int(early), int(([first] if first is not None else []) + rest == tokenizer.encode(whole))])


def run_tokenizer_decode(
    token_bytes: UInt8[Tensor, " total"],
    token_offsets: Int[Tensor, " vocab_size_plus_1"],
    merges: Int[Tensor, " num_merges 2"],
    special_tokens: list[str] | None,
    ids: Int[Tensor, " num_tokens"],
) -> Int[Tensor, " n_bytes"]:
    """decode(ids), as code points padded to the number of bytes decoded (bpe_tensors.code_points)."""
    tokenizer = _tokenizer(token_bytes, token_offsets, merges, special_tokens)
    n_bytes = sum(len(tokenizer.vocab[i]) for i in ids.tolist() if i in tokenizer.vocab)
    return bpe_tensors.code_points(tokenizer.decode(ids.tolist()), n_bytes)
