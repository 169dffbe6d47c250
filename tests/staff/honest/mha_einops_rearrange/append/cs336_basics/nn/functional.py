from einops import rearrange


def multihead_self_attention(
    x: Float[Tensor, "... seq d_model"],
    q_proj_weight: Float[Tensor, "d_q d_model"],
    k_proj_weight: Float[Tensor, "d_kv d_model"],
    v_proj_weight: Float[Tensor, "d_kv d_model"],
    o_proj_weight: Float[Tensor, "d_model d_q"],
    num_heads: int,
    rope_cache: tuple[Tensor, Tensor] | None = None,
    token_positions: Int[Tensor, "..."] | None = None,
    kv_cache=None,
    attention_mask: Bool[Tensor, "... keys"] | None = None,
) -> Float[Tensor, "... seq d_model"]:
    """Causal MHA / GQA; heads split and merged with einops.rearrange."""
    _checks.multihead_self_attention(
        x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, num_heads, kv_cache, attention_mask
    )
    seq, d_k = x.shape[-2], q_proj_weight.shape[0] // num_heads
    q = rearrange(linear(x, q_proj_weight), "... s (h d) -> ... h s d", d=d_k)
    k = rearrange(linear(x, k_proj_weight), "... s (h d) -> ... h s d", d=d_k)
    v = rearrange(linear(x, v_proj_weight), "... s (h d) -> ... h s d", d=d_k)
    past = 0 if kv_cache is None else kv_cache.length
    if rope_cache is not None:
        cos, sin = rope_cache
        if token_positions is None:
            token_positions = torch.arange(past, past + seq, device=x.device)
        positions = rearrange(token_positions, "... s -> ... 1 s")  # the same positions for every head
        q = rope(q, cos, sin, positions)
        k = rope(k, cos, sin, positions)
    if kv_cache is not None:
        k, v = kv_cache.update(k, v)
    keys = k.shape[-2]
    mask = causal_mask(seq, keys, device=x.device) if seq > 1 else None
    if attention_mask is not None:
        keep = rearrange(attention_mask, "... k -> ... 1 1 k")
        mask = keep if mask is None else mask & keep
    out = grouped_query_attention(q, k, v, mask)
    return linear(rearrange(out, "... h s d -> ... s (h d)"), o_proj_weight)
