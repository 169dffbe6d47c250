"""The decoder layer and the language model (as forward functions of the modules): their mistakes."""

import torch

from cs336_basics.nn import TransformerBlock, TransformerLM
from cs336_basics.nn import functional as F

from . import mistake

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
