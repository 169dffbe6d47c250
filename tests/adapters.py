"""Adapters: the `run_*` functions the tests call, with the names and parameters of Stanford
CS336 assignment 1 (v1.0.2), each wired to this package in a line or two. The stateless ones
call the kernel; the others build the module in the dtype and device of its weights (the FFN
block: of its input), load the given weights strictly (through
`cs336_basics.nn.convert.load_state_dict`) and call it.
"""

import os
import tempfile
from typing import Any

import torch
from jaxtyping import Bool, Float, Int, UInt8
from torch import Tensor

import cs336_basics.generate as generation
import cs336_basics.tokenizer.tensors as bpe_tensors
import cs336_basics.tokenizer.tokenizer as bpe_tokenizer
import cs336_basics.tokenizer.train_bpe as bpe_training
from cs336_basics.nn import convert
from cs336_basics.nn import functional as F
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
from cs336_basics.nn.parallel import ColumnParallelLinear, ParallelSwiGLUFFN, RowParallelLinear, launch


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


def run_embedding(
    vocab_size: int,
    d_model: int,
    weights: Float[Tensor, " vocab_size d_model"],
    token_ids: Int[Tensor, " ..."],
) -> Float[Tensor, " ... d_model"]:
    return _loaded(Embedding(vocab_size, d_model, **_like(weights)), {"weight": weights})(token_ids)


def run_swiglu(
    d_model: int,
    d_ff: int,
    w1_weight: Float[Tensor, " d_ff d_model"],
    w2_weight: Float[Tensor, " d_model d_ff"],
    w3_weight: Float[Tensor, " d_ff d_model"],
    in_features: Float[Tensor, " ... d_model"],
) -> Float[Tensor, " ... d_model"]:
    weights = {"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight}
    return _loaded(SwiGLUFFN(d_model, d_ff, **_like(w1_weight)), weights)(in_features)


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
    module = MultiHeadSelfAttention(d_model, num_heads, _kv_heads(num_heads, d_model, k_proj_weight), **_like(q_proj_weight))
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
    rope = RotaryPositionalEmbedding(theta, d_model // num_heads, max_seq_len, device=in_features.device)
    module = MultiHeadSelfAttention(d_model, num_heads, _kv_heads(num_heads, d_model, k_proj_weight), rope, **_like(q_proj_weight))
    module = _loaded(module, _attn_weights(q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight))
    return module(in_features, token_positions)


def run_rope(
    d_k: int,
    theta: float,
    max_seq_len: int,
    in_query_or_key: Float[Tensor, " ... sequence_length d_k"],
    token_positions: Int[Tensor, " ... sequence_length"],
) -> Float[Tensor, " ... sequence_length d_k"]:
    return RotaryPositionalEmbedding(theta, d_k, max_seq_len, device=in_query_or_key.device)(in_query_or_key, token_positions)


def run_transformer_block(
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    weights: dict[str, Tensor],
    in_features: Float[Tensor, " batch sequence_length d_model"],
) -> Float[Tensor, " batch sequence_length d_model"]:
    kv_heads = _kv_heads(num_heads, d_model, weights["attn.k_proj.weight"])
    block = TransformerBlock(d_model, num_heads, d_ff, max_seq_len, theta, kv_heads, **_like(weights["ln1.weight"]))
    return _loaded(block, weights)(in_features)


def _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights) -> TransformerLM:
    """Beyond CS336: no `lm_head.weight` in `weights` means tied embeddings."""
    kv_heads = _kv_heads(num_heads, d_model, weights["layers.0.attn.k_proj.weight"])
    config = TransformerLMConfig(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta,
                                 kv_heads, tie_embeddings="lm_head.weight" not in weights)  # fmt: skip
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
) -> Float[Tensor, " batch_size sequence_length vocab_size"]:
    """Beyond CS336: no `lm_head.weight` in `weights` means tied embeddings."""
    return _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights)(in_indices)


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
) -> Int[Tensor, " new_tokens"]:
    """Beyond CS336: the token ids greedy decoding (temperature 0) appends to prompt_ids."""
    model = _lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, weights)
    return torch.tensor(list(generation.generate(model, prompt_ids.tolist(), max_new_tokens)), dtype=torch.long)


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
    """x + FFN(Norm(x)); `weights` uses the block's state dict keys (`ffn_norm.weight`,
    `feed_forward.w1.weight`, ...)."""
    config = FFNBlockConfig(d_model, d_ff, norm=norm, ffn=ffn, activation=activation, eps=eps, bias=bias)
    return _loaded(FFNBlock(config, **_like(in_features)), weights)(in_features)


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
) -> Float[Tensor, " ... d_model"]:
    weights = {"w1.weight": w1_weight, "w2.weight": w2_weight, "w3.weight": w3_weight}
    return launch.run_sharded(launch.module_factory(ParallelSwiGLUFFN, d_model=d_model, d_ff=d_ff), weights, in_features, world_size)


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
