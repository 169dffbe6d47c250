def swiglu_ffn(
    x: Float[Tensor, "... d_model"],
    w1: Float[Tensor, "d_ff d_model"],
    w2: Float[Tensor, "d_model d_ff"],
    w3: Float[Tensor, "d_ff d_model"],
    activation: str = "silu",
) -> Float[Tensor, "... d_model"]:
    """W2 (act(W1 x) * W3 x), the two input projections as one matrix product."""
    _checks.swiglu_ffn(x, w1, w2, w3)
    act = get_activation(activation)
    gate, up = linear(x, torch.cat([w1, w3], dim=0)).chunk(2, dim=-1)  # (..., d_ff) each
    return linear(act(gate) * up, w2)
