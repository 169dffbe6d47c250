"""Llama-family checkpoint names -> this package's decoder names (CS336's), and the q/k row
permutation between RoPE conventions.

Our decoder rotates adjacent pairs (x0, x1), (x2, x3), ... (CS336; Meta's llama, which rotates
complex numbers formed from adjacent pairs). Hugging Face's Llama rotates halves (x_k with
x_{k + d/2}, `rotate_half`); its conversion script (transformers' convert_llama_weights_to_hf.py,
`permute`) therefore reorders the rows of each head of q_proj and k_proj so that the two
conventions give the same attention. Loading Hugging Face weights undoes that reordering.
llama.cpp's convert_hf_to_gguf.py (LlamaModel.modify_tensors, `permute`) applies the inverse
when it writes a GGUF file, so GGUF's attn_q / attn_k are already in Meta's (our) order.

Names, per layer (ours: Hugging Face, Meta llama3, GGUF):
"""

from torch import Tensor

COLUMNS = ("hf", "meta", "gguf")  # the namings of LAYER_NAMES' and TOP_NAMES' columns, in order

# our name within a layer: (Hugging Face, Meta, GGUF)
LAYER_NAMES = {
    "ln1.weight": ("input_layernorm.weight", "attention_norm.weight", "attn_norm.weight"),
    "attn.q_proj.weight": ("self_attn.q_proj.weight", "attention.wq.weight", "attn_q.weight"),
    "attn.k_proj.weight": ("self_attn.k_proj.weight", "attention.wk.weight", "attn_k.weight"),
    "attn.v_proj.weight": ("self_attn.v_proj.weight", "attention.wv.weight", "attn_v.weight"),
    "attn.output_proj.weight": ("self_attn.o_proj.weight", "attention.wo.weight", "attn_output.weight"),
    "ln2.weight": ("post_attention_layernorm.weight", "ffn_norm.weight", "ffn_norm.weight"),
    "ffn.w1.weight": ("mlp.gate_proj.weight", "feed_forward.w1.weight", "ffn_gate.weight"),
    "ffn.w3.weight": ("mlp.up_proj.weight", "feed_forward.w3.weight", "ffn_up.weight"),
    "ffn.w2.weight": ("mlp.down_proj.weight", "feed_forward.w2.weight", "ffn_down.weight"),
}
# our name at the top of the model: (Hugging Face, Meta, GGUF)
TOP_NAMES = {
    "token_embeddings.weight": ("model.embed_tokens.weight", "tok_embeddings.weight", "token_embd.weight"),
    "ln_final.weight": ("model.norm.weight", "norm.weight", "output_norm.weight"),
    "lm_head.weight": ("lm_head.weight", "output.weight", "output.weight"),
}
LAYER_PREFIX = {"hf": "model.layers.", "meta": "layers.", "gguf": "blk."}
__doc__ += "\n".join(f"    {ours:26s} {' | '.join(names)}" for ours, names in {**TOP_NAMES, **LAYER_NAMES}.items())


def rotate_half_to_pairs(w: Tensor, num_heads: int) -> Tensor:
    """Rows of a Hugging Face q_proj/k_proj (d_out, d_in) -> adjacent-pair order: within each
    head, row k of the first half and row k of the second half become rows 2k and 2k+1."""
    d_out, d_in = w.shape
    head_dim = d_out // num_heads
    return w.reshape(num_heads, 2, head_dim // 2, d_in).transpose(1, 2).reshape(d_out, d_in)  # (d_out, d_in)


def to_ours(
    state_dict: dict[str, Tensor], naming: str, num_heads: int, num_kv_heads: int, tied: bool = False
) -> dict[str, Tensor]:
    """Rename a Llama-family state dict from `naming` (one of COLUMNS) to ours. Keys may be a
    whole model's, one layer's without its prefix (`self_attn.q_proj.weight`, a block) or one
    attention's (`q_proj.weight`). Hugging Face q/k rows are reordered to adjacent pairs. With
    `tied`, the output head is dropped if it equals the embeddings (checkpoints store it twice)."""
    if naming not in COLUMNS:
        raise ValueError(f"unknown naming {naming!r}; valid names are {list(COLUMNS)}")
    col = COLUMNS.index(naming)
    layer = {names[col]: ours for ours, names in LAYER_NAMES.items()}
    attn_only = {src.split(".", 1)[1]: ours.split(".", 1)[1] for src, ours in layer.items() if ours.startswith("attn.")}
    top = {names[col]: ours for ours, names in TOP_NAMES.items()}
    prefix = LAYER_PREFIX[naming]
    out, unknown = {}, []
    for key, value in state_dict.items():
        if key in top:
            new = top[key]
        elif key.startswith(prefix) and key[len(prefix) :].split(".", 1)[0].isdigit():
            index, rest = key[len(prefix) :].split(".", 1)
            new = f"layers.{index}.{layer[rest]}" if rest in layer else None
        else:
            new = layer.get(key) or attn_only.get(key)
        if new is None:
            unknown.append(key)
            continue
        if naming == "hf" and new.endswith(("q_proj.weight", "k_proj.weight")):
            value = rotate_half_to_pairs(value, num_heads if new.endswith("q_proj.weight") else num_kv_heads)
        out[new] = value
    if unknown:
        raise ValueError(f"naming={naming!r}: no Llama name matches {unknown}")
    if tied and "lm_head.weight" in out:
        head = out.pop("lm_head.weight")
        emb = out.get("token_embeddings.weight")
        if emb is not None and not (head.shape == emb.shape and bool((head == emb).all())):
            raise ValueError("the model ties its embeddings, but the checkpoint's output head differs from them")
    return out
