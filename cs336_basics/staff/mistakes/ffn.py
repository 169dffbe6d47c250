"""The feed-forward networks, SwiGLU, the position-wise FFN and the FFN block: their mistakes, accepted
variants and alternative solutions."""

import torch

from cs336_basics.nn import FFNBlock
from cs336_basics.nn import functional as F

from . import alternative, mistake, plus_bias, up, variant
from .linear import NO_BIASES

# ---- swiglu --------------------------------------------------------------------------------------


@mistake(
    "swiglu-w1_w3_swapped",
    F,
    "swiglu_ffn",
    diagnosis="SwiGLU with w1 and w3 swapped (SiLU on the up projection W3 x, not the gate W1 x)",
)
def swiglu_w1_w3_swapped(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w3)) * F.linear(x, w1), w2)


@mistake("swiglu-activation_on_up_branch_too", F, "swiglu_ffn", diagnosis="SwiGLU applying SiLU to both W1 x and W3 x")
def swiglu_silu_on_up_branch_too(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1)) * F.silu(F.linear(x, w3)), w2)


@mistake(
    "swiglu-gaussian_cdf_gate", F, "swiglu_ffn", diagnosis="SwiGLU gated with GELU instead of SiLU (that is GeGLU)"
)
def swiglu_gelu_for_silu(x, w1, w2, w3, activation="silu"):
    return F.linear(F.gelu(F.linear(x, w1)) * F.linear(x, w3), w2)


@mistake("swiglu-sigmoid_gate", F, "swiglu_ffn", diagnosis="SwiGLU gated with sigmoid instead of SiLU (that is GLU)")
def swiglu_sigmoid_for_silu(x, w1, w2, w3, activation="silu"):
    return F.linear(torch.sigmoid(F.linear(x, w1)) * F.linear(x, w3), w2)


@mistake("swiglu-no_gate", F, "swiglu_ffn", diagnosis="SwiGLU without the W3 x factor: W2 SiLU(W1 x)")
def swiglu_without_gate(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1)), w2)


@mistake(
    "swiglu-activation_after_product",
    F,
    "swiglu_ffn",
    diagnosis="SwiGLU applying SiLU after the product: W2 SiLU(W1 x * W3 x)",
)
def swiglu_silu_after_product(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1) * F.linear(x, w3)), w2)


@variant("swiglu-matmuls", F, "swiglu_ffn")
def swiglu_in_three_lines(x, w1, w2, w3, activation="silu"):
    gate = x @ w1.T
    if activation == "silu":
        gate = gate * torch.sigmoid(up(gate)).to(gate.dtype)  # SiLU, sigmoid in float32 (float64 kept)
    else:  # the gate's other nonlinearities (GeGLU, ...): this variant is about the matmuls
        gate = F.get_activation(activation)(gate)
    return (gate * (x @ w3.T)) @ w2.T


alternative(
    "swiglu",
    "swiglu_ffn",
    """
    a = torch.einsum("...d,fd->...f", x, w1)
    b = torch.einsum("...d,fd->...f", x, w3)
    h = silu(a) * b
    return torch.einsum("...f,df->...d", h, w2)
    """,
)


# ---- positionwise_ffn ----------------------------------------------------------------------------


@mistake(
    "positionwise_ffn-ignores_biases",
    F,
    "positionwise_ffn",
    diagnosis="the position-wise FFN without its biases b1 and b2",
    shows=NO_BIASES,
)
def positionwise_ignores_biases(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.gelu(F.linear(x, w1)), w2)


@mistake(
    "positionwise_ffn-relu_activation",
    F,
    "positionwise_ffn",
    diagnosis="the position-wise FFN with ReLU where its activation argument says GELU",
)
def positionwise_relu_for_gelu(x, w1, b1, w2, b2, activation="gelu"):
    return plus_bias(F.linear(F.relu(plus_bias(F.linear(x, w1), b1)), w2), b2)


@mistake(
    "positionwise_ffn-bias_after_activation",
    F,
    "positionwise_ffn",
    diagnosis="the position-wise FFN adding b1 after the activation instead of before",
)
def positionwise_bias_after_activation(x, w1, b1, w2, b2, activation="gelu"):
    return plus_bias(F.linear(plus_bias(F.gelu(F.linear(x, w1)), b1), w2), b2)


@mistake(
    "positionwise_ffn-activation_ignored",
    F,
    "positionwise_ffn",
    diagnosis="the position-wise FFN applying GELU whatever its activation argument says",
)
def positionwise_always_gelu(x, w1, b1, w2, b2, activation="gelu"):
    return plus_bias(F.linear(F.gelu(plus_bias(F.linear(x, w1), b1)), w2), b2)


# ---- ffn_block -----------------------------------------------------------------------------------


@mistake(
    "ffn_block-post_norm",
    FFNBlock,
    "forward",
    diagnosis="the block normalising after the residual sum (post-norm: Norm(x + FFN(x)))",
)
def block_post_norm(self, x):
    return self.ln2(x + self.ffn(x))


@mistake(
    "ffn_block-no_residual",
    FFNBlock,
    "forward",
    diagnosis="the block without the residual connection (FFN(Norm(x)) alone)",
)
def block_no_residual(self, x):
    return self.ffn(self.ln2(x))


@mistake(
    "ffn_block-residual_of_normed_input",
    FFNBlock,
    "forward",
    diagnosis="the block adding the normalised input instead of x (Norm(x) + FFN(Norm(x)))",
)
def block_residual_of_normed_input(self, x):
    h = self.ln2(x)
    return h + self.ffn(h)
