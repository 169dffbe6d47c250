"""Mistakes in the decoder: attention, RoPE, multi-head self-attention, the decoder layer, the
language model and generation."""

import math

import torch

import cs336_basics.generation.generate as generation
from cs336_basics.nn import TransformerBlock, TransformerLM
from cs336_basics.nn import functional as F

from . import mistake

# ---- attention (scaled_dot_product_attention) --------------------------------------------------


def _masked(scores, blocked):
    return scores if blocked is None else scores.masked_fill(blocked, float("-inf"))


def _blocked(mask):
    return None if mask is None else ~mask


GENERATION_DIVERGES = (
    "token ids that diverge where several known mistakes make them diverge (positions or the KV cache in "
    "generation, or attention or the model underneath): check that `pytest -k lm` and `-k mha` pass first"
)


@mistake(
    "attention-mask_inverted",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention treating True in the mask as blocked (masked_fill(mask, -inf) instead of ~mask)",
)
def sdpa_mask_inverted(Q, K, V, mask=None):
    return F.softmax(_masked(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), mask), -1) @ V


@mistake(
    "attention-scaled_by_d_k",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention dividing the scores by d_k instead of sqrt(d_k)",
)
def sdpa_scale_by_d_k(Q, K, V, mask=None):
    return F.softmax(_masked(Q @ K.transpose(-1, -2) / Q.shape[-1], _blocked(mask)), -1) @ V


@mistake(
    "attention-large_negative_fill",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention filling masked scores with -1e9 instead of -inf (a query that may attend to nothing "
    "gets the mean of V instead of 0)",
)
def sdpa_large_negative_fill(Q, K, V, mask=None):
    s = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    s = s if mask is None else s.masked_fill(~mask, -1e9)
    return F.softmax(s, -1) @ V


@mistake(
    "attention-normalised_over_queries",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention with the softmax over the queries (dim=-2) instead of over the keys (dim=-1)",
)
def sdpa_softmax_over_queries(Q, K, V, mask=None):
    s = _masked(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), _blocked(mask))
    return torch.nan_to_num(F.softmax(s, -2)) @ V


@mistake(
    "attention-mask_after_normalising",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention zeroing masked probabilities after the softmax (the rows no longer sum to 1)",
)
def sdpa_mask_after_softmax(Q, K, V, mask=None):
    p = F.softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), -1)
    return (p if mask is None else p * mask) @ V


@mistake(
    "attention-no_scaling",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention without the 1/sqrt(d_k) scaling of the scores",
)
def sdpa_no_scale(Q, K, V, mask=None):
    return F.softmax(_masked(Q @ K.transpose(-1, -2), _blocked(mask)), -1) @ V


@mistake(
    "attention-scores_normalised_in_half_precision",
    F,
    "scaled_dot_product_attention",
    diagnosis="attention with its softmax computed in the input's 16-bit dtype (over more than 65504 keys the "
    "float16 sum of exps is inf): compute the scores' softmax in float32 (your softmax does)",
)
def sdpa_softmax_in_half(Q, K, V, mask=None):
    scores = _masked(Q * (1.0 / math.sqrt(Q.shape[-1])) @ K.transpose(-1, -2), _blocked(mask))  # not upcast
    return _softmax_in_input_dtype(scores) @ V


def _softmax_in_input_dtype(s):
    """The reference's softmax over the last dimension, with its upcast deleted."""
    e = torch.exp(s - s.amax(-1, keepdim=True).clamp(min=torch.finfo(s.dtype).min))
    return e * e.sum(-1, keepdim=True).clamp(min=torch.finfo(s.dtype).tiny).reciprocal()


# ---- rope -------------------------------------------------------------------------------------------

_rope = F.rope  # the correct kernel, for mistakes that call it while F.rope is replaced


def _rope_with_tables(x, c, s):
    """Adjacent pairs rotated by the gathered tables c, s (..., seq, d_k/2), in x's dtype."""
    p = x.unflatten(-1, (-1, 2))
    x0, x1 = p[..., 0], p[..., 1]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), -1).flatten(-2)


def _rope_with_angles(x, ang):
    return _rope_with_tables(x, ang.cos().to(x.dtype), ang.sin().to(x.dtype))


@mistake(
    "rope-rotates_halves",
    F,
    "rope",
    diagnosis="RoPE pairing x[k] with x[k + d_k/2] (Hugging Face's rotate_half) instead of adjacent pairs "
    "(x[2k], x[2k+1])",
)
def rope_rotate_halves(x, cos, sin, token_positions):
    c, s = cos[token_positions].to(x.dtype), sin[token_positions].to(x.dtype)
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)


@mistake(
    "rope-ignores_token_positions",
    F,
    "rope",
    diagnosis="RoPE at positions 0, 1, ..., seq-1 whatever token_positions says",
)
def rope_ignores_positions(x, cos, sin, token_positions):
    return _rope(x, cos, sin, torch.arange(x.shape[-2]))


@mistake(
    "rope-rotates_backwards",
    F,
    "rope",
    diagnosis="RoPE rotating by minus the angle (the signs of the sin terms swapped)",
)
def rope_sign_flipped(x, cos, sin, token_positions):
    return _rope(x, cos, -sin, token_positions)


@mistake(
    "rope-frequency_exponent_k_not_2k",
    F,
    "rope",
    diagnosis="RoPE with frequencies theta^(-k/d_k) instead of theta^(-2k/d_k) for pair k",
)
def rope_frequency_uses_k_not_2k(x, cos, sin, token_positions):
    inv_freq = torch.acos(cos[1].double().clamp(-1, 1))  # position 1's angles: theta^(-2k/d_k), all in [0, 1]
    angles = token_positions.to(torch.float64)[..., None] * inv_freq.sqrt()  # theta^(-k/d_k)
    return _rope_with_angles(x, angles)


@mistake(
    "rope-no_float32_upcast",
    F,
    "rope",
    diagnosis="RoPE computed in the input's 16-bit dtype (cos and sin rounded to bfloat16): gather the tables "
    "in float32, rotate in float32, cast back once",
)
def rope_no_upcast(x, cos, sin, token_positions):
    # the reference with its upcast deleted
    return _rope_with_tables(x, cos[token_positions].to(x.dtype), sin[token_positions].to(x.dtype))


# ---- mha: each mistake changes one step of project -> split heads -> rotate -> attend -> merge -------


def _split_heads(t, d_k):
    return t.unflatten(-1, (-1, d_k)).transpose(-3, -2)  # (..., heads, seq, d_k)


def _rotate(x, rope_cache, token_positions, kv_cache, *heads):
    """RoPE at the reference's positions: token_positions, else those after what kv_cache holds."""
    if rope_cache is None:
        return heads
    past = kv_cache.length if kv_cache is not None else 0
    pos = (torch.arange(past, past + x.shape[-2]) if token_positions is None else token_positions).unsqueeze(-2)
    return tuple(F.rope(t, *rope_cache, pos) for t in heads)


def _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads, split=_split_heads):
    d_k = q_proj_weight.shape[0] // num_heads
    return (split(x @ w.T, d_k) for w in (q_proj_weight, k_proj_weight, v_proj_weight))


def _cached(kv_cache, k, v):
    """Every key and value so far: the new ones appended to the cache, as the reference does."""
    return (k, v) if kv_cache is None else kv_cache.update(k, v)


def _merge(out, o_proj_weight):
    return out.transpose(-3, -2).flatten(-2) @ o_proj_weight.T


def _mask(x, k, attention_mask, causal: bool = True):
    """The reference's mask over (queries, keys): causal (the queries are the last positions)
    and, with attention_mask, no padding key, for every head."""
    mask = F.causal_mask(x.shape[-2], k.shape[-2]) if causal else None
    if attention_mask is not None:
        keep = attention_mask[..., None, None, :]
        mask = keep if mask is None else mask & keep
    return mask


@mistake(
    "mha-no_causal_mask",
    F,
    "multihead_self_attention",
    diagnosis="self-attention without the causal mask (every position sees later tokens)",
)
def mha_no_causal_mask(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                       token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    return _merge(F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask, causal=False)), o_proj_weight)


def _split_heads_strided(t, d_k):
    return t.unflatten(-1, (d_k, -1)).transpose(-1, -2).transpose(-3, -2)  # head h takes columns h, h + H, ...


@mistake(
    "mha-heads_split_wrong",
    F,
    "multihead_self_attention",
    diagnosis="self-attention splitting d_model into (d_k, num_heads) instead of (num_heads, d_k)",
)
def mha_heads_split_wrong(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                          token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads, split=_split_heads_strided)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    return _merge(F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask)), o_proj_weight)


@mistake(
    "mha-kv_heads_tiled",
    F,
    "multihead_self_attention",
    diagnosis="grouped-query attention with query head h reading kv head h % num_kv_heads (tiled) instead of "
    "h // (num_heads / num_kv_heads)",
)
def mha_gqa_tiled_not_interleaved(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads,
                                  rope_cache=None, token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    group = num_heads // k.shape[-3]
    k, v = (t.repeat(*([1] * (t.dim() - 3)), group, 1, 1) for t in (k, v))  # repeat, not repeat_interleave
    return _merge(F.scaled_dot_product_attention(q, k, v, _mask(x, k, attention_mask)), o_proj_weight)


@mistake(
    "mha-rotary_on_values",
    F,
    "multihead_self_attention",
    diagnosis="self-attention rotating the values as well as the queries and keys",
)
def mha_rope_on_values(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, rope_cache=None,
                       token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads)
    q, k, v = _rotate(x, rope_cache, token_positions, kv_cache, q, k, v)
    k, v = _cached(kv_cache, k, v)
    return _merge(F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask)), o_proj_weight)


def _split_heads_without_transpose(t, d_k):
    return t.reshape(*t.shape[:-2], -1, t.shape[-2], d_k)  # (..., seq, H * d_k) read as (..., H, seq, d_k)


@mistake(
    "mha-heads_reshaped_without_transpose",
    F,
    "multihead_self_attention",
    diagnosis="self-attention splitting the heads with a reshape to (num_heads, seq, d_k) and no transpose "
    "(each head then mixes positions)",
)
def mha_heads_reshaped_without_transpose(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads,
                                         rope_cache=None, token_positions=None, kv_cache=None, attention_mask=None):  # fmt: skip
    q, k, v = _heads(x, q_proj_weight, k_proj_weight, v_proj_weight, num_heads, split=_split_heads_without_transpose)
    q, k = _rotate(x, rope_cache, token_positions, kv_cache, q, k)
    k, v = _cached(kv_cache, k, v)
    out = F.grouped_query_attention(q, k, v, _mask(x, k, attention_mask))
    return out.reshape(*x.shape[:-1], -1) @ o_proj_weight.T  # merged back with the same reshape


@mistake(
    "mha-causal_mask_hides_the_diagonal",
    F,
    "causal_mask",
    diagnosis="a causal mask with j < i instead of j <= i: each position cannot see itself (and the first "
    "sees nothing)",
)
def causal_mask_strict(num_queries, num_keys, device=None):
    offset = num_keys - num_queries
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(diagonal=offset - 1)


# ---- decoder layer and lm (as forward functions of the modules) ---------------------------------------


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


# ---- generate (replacements for cs336_basics.generation.generate.generate) -----------------------------------------


def _prefill(model, prompt_ids, max_new_tokens):
    ids = torch.tensor(list(prompt_ids))[None]
    return ids, min(max_new_tokens, model.config.context_length - ids.shape[-1])


def _greedy_with_cache(model, prompt_ids, max_new_tokens, next_input):
    """Greedy decoding with a KV cache that feeds, after each chosen token, what
    next_input(step, token, prompt ids) returns: (token ids (1,), their positions)."""
    ids, budget = _prefill(model, prompt_ids, max_new_tokens)
    cache = model.new_kv_cache(ids.shape[-1] + budget)
    with torch.no_grad():
        logits = model(ids, kv_cache=cache)[:, -1]
        for step in range(budget):
            token = logits.argmax(-1)
            yield int(token)
            if step < budget - 1:
                fed, positions = next_input(step, token, ids)
                logits = model(fed[:, None], token_positions=positions, kv_cache=cache)[:, -1]


@mistake(
    "generate-positions_restart_with_cache",
    generation,
    "generate",
    diagnosis="generation feeding each new token at position 0 (not after the cached ones)",
    shows=GENERATION_DIVERGES,
)
def generate_positions_restart(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                               generator=None, use_cache=True):  # fmt: skip
    yield from _greedy_with_cache(
        model, prompt_ids, max_new_tokens, lambda step, token, ids: (token, torch.tensor([0]))
    )


@mistake(
    "generate-next_token_from_first_position",
    generation,
    "generate",
    diagnosis="generation choosing each token from the logits of the first position instead of the last",
    shows=GENERATION_DIVERGES,
)
def generate_from_first_position(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                                 generator=None, use_cache=True):  # fmt: skip
    ids, budget = _prefill(model, prompt_ids, max_new_tokens)
    with torch.no_grad():
        for _ in range(budget):
            ids = torch.cat([ids, model(ids)[:, 0].argmax(-1, keepdim=True)], -1)
            yield int(ids[0, -1])


@mistake(
    "generate-newest_token_alone",
    generation,
    "generate",
    diagnosis="generation running only the newest token without a KV cache (it attends to itself alone)",
    shows=GENERATION_DIVERGES,
)
def generate_cache_not_advanced(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                                generator=None, use_cache=True):  # fmt: skip
    ids, budget = _prefill(model, prompt_ids, max_new_tokens)
    with torch.no_grad():
        logits = model(ids)[:, -1]
        for step in range(budget):
            token = logits.argmax(-1)
            yield int(token)
            logits = model(token[:, None], token_positions=torch.tensor([ids.shape[-1] + step]))[:, -1]


@mistake(
    "generate-cached_position_off_by_one",
    generation,
    "generate",
    diagnosis="generation feeding each new token one position too far (cache length + 1, not the cache length)",
)
def generate_cached_position_off_by_one(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0,
                                        eos_token_ids=(), generator=None, use_cache=True):  # fmt: skip
    yield from _greedy_with_cache(
        model, prompt_ids, max_new_tokens, lambda step, token, ids: (token, torch.tensor([ids.shape[-1] + step + 1]))
    )


@mistake(
    "generate-previous_token_after_prefill",
    generation,
    "generate",
    diagnosis="generation feeding the model the token before the one it just chose (one step behind after the prompt)",
)
def generate_previous_token(model, prompt_ids, max_new_tokens, temperature=0.0, top_p=1.0, eos_token_ids=(),
                            generator=None, use_cache=True):  # fmt: skip
    chosen = []

    def one_behind(step, token, ids):
        chosen.append(token)
        return (ids[:, -1] if step == 0 else chosen[-2]), torch.tensor([ids.shape[-1] + step])

    yield from _greedy_with_cache(model, prompt_ids, max_new_tokens, one_behind)
