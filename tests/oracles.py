"""Independent oracles: each adapter's computation written with PyTorch's built-ins.
None of this is our code path; the reference must agree with it."""

import torch.nn.functional as TF

ACTIVATIONS = {
    "silu": TF.silu,
    "gelu": TF.gelu,
    "gelu_tanh": lambda x: TF.gelu(x, approximate="tanh"),
    "relu": TF.relu,
}


def swiglu_ffn(x, w1, w2, w3, activation="silu"):
    """W2(act(W1 x) * W3 x) with F.linear, like functional.swiglu_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1)) * TF.linear(x, w3), w2)


def positionwise_ffn(x, w1, b1, w2, b2, activation="gelu"):
    """act(x W1^T + b1) W2^T + b2 with F.linear, like functional.positionwise_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1, b1)), w2, b2)


def _ffn_block(d_model, d_ff, weights, in_features, norm="rmsnorm", ffn="swiglu", activation="silu", eps=1e-5, bias=False):
    w, x = weights, in_features
    if norm == "rmsnorm":
        h = TF.rms_norm(x, (d_model,), w["ffn_norm.weight"], eps)
    else:
        h = TF.layer_norm(x, (d_model,), w["ffn_norm.weight"], w.get("ffn_norm.bias"), eps)
    if ffn == "swiglu":
        h = swiglu_ffn(h, w["feed_forward.w1.weight"], w["feed_forward.w2.weight"], w["feed_forward.w3.weight"], activation)
    else:
        h = positionwise_ffn(h, w["feed_forward.w1.weight"], w.get("feed_forward.b1"), w["feed_forward.w2.weight"],
                             w.get("feed_forward.b2"), activation)
    return x + h


ORACLES = {
    "run_linear": lambda d_in, d_out, weights, in_features: TF.linear(in_features, weights),
    "run_embedding": lambda vocab_size, d_model, weights, token_ids: TF.embedding(token_ids, weights),
    "run_silu": lambda in_features: TF.silu(in_features),
    "run_gelu": lambda in_features, approximate="none": TF.gelu(in_features, approximate=approximate),
    "run_softmax": lambda in_features, dim: TF.softmax(in_features, dim=dim),
    "run_rmsnorm": lambda d_model, eps, weights, in_features: TF.rms_norm(in_features, (d_model,), weights, eps),
    "run_layernorm": lambda d_model, eps, weights, biases, in_features: TF.layer_norm(in_features, (d_model,), weights, biases, eps),
    "run_swiglu": lambda d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features: swiglu_ffn(
        in_features, w1_weight, w2_weight, w3_weight
    ),
    "run_positionwise_feedforward": lambda d_model, d_ff, w1_weight, b1, w2_weight, b2, in_features, activation="gelu": (
        positionwise_ffn(in_features, w1_weight, b1, w2_weight, b2, activation)
    ),
    "run_ffn_block": _ffn_block,
}
