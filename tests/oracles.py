"""Independent oracles: each adapter's computation written with PyTorch's built-ins.
None of this is our code path; the reference must agree with it."""

import torch.nn.functional as TF


def _ffn_block(d_model, d_ff, weights, in_features, norm="rmsnorm", ffn="swiglu", activation="silu", eps=1e-5, bias=False):
    w, x = weights, in_features
    if norm == "rmsnorm":
        h = TF.rms_norm(x, (d_model,), w["ffn_norm.weight"], eps)
    else:
        h = TF.layer_norm(x, (d_model,), w["ffn_norm.weight"], w.get("ffn_norm.bias"), eps)
    act = ACTIVATIONS[activation]
    if ffn == "swiglu":
        gate = act(TF.linear(h, w["feed_forward.w1.weight"]))
        h = TF.linear(gate * TF.linear(h, w["feed_forward.w3.weight"]), w["feed_forward.w2.weight"])
    else:
        h = TF.linear(act(TF.linear(h, w["feed_forward.w1.weight"], w.get("feed_forward.b1"))), w["feed_forward.w2.weight"], w.get("feed_forward.b2"))
    return x + h


ACTIVATIONS = {
    "silu": TF.silu,
    "gelu": TF.gelu,
    "gelu_tanh": lambda x: TF.gelu(x, approximate="tanh"),
    "relu": TF.relu,
}

ORACLES = {
    "run_linear": lambda d_in, d_out, weights, in_features: TF.linear(in_features, weights),
    "run_embedding": lambda vocab_size, d_model, weights, token_ids: TF.embedding(token_ids, weights),
    "run_silu": lambda in_features: TF.silu(in_features),
    "run_gelu": lambda in_features, approximate="none": TF.gelu(in_features, approximate=approximate),
    "run_softmax": lambda in_features, dim: TF.softmax(in_features, dim=dim),
    "run_rmsnorm": lambda d_model, eps, weights, in_features: TF.rms_norm(in_features, (d_model,), weights, eps),
    "run_layernorm": lambda d_model, eps, weights, biases, in_features: TF.layer_norm(in_features, (d_model,), weights, biases, eps),
    "run_swiglu": lambda d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features: TF.linear(
        TF.silu(TF.linear(in_features, w1_weight)) * TF.linear(in_features, w3_weight), w2_weight
    ),
    "run_positionwise_feedforward": lambda d_model, d_ff, w1_weight, b1, w2_weight, b2, in_features, activation="gelu": TF.linear(
        ACTIVATIONS[activation](TF.linear(in_features, w1_weight, b1)), w2_weight, b2
    ),
    "run_ffn_block": _ffn_block,
}
