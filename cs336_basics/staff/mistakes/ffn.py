"""Mistakes in the kernels of the feed-forward path: linear, embedding, the activations,
softmax, the norms, the FFNs and the FFN block."""

import math

import torch

from cs336_basics.nn import FFNBlock
from cs336_basics.nn import functional as F
from cs336_basics.testing import WRONG_DTYPE

from . import mistake, plus_bias, up

# ---- linear and embedding ---------------------------------------------------------------------


@mistake(
    "linear-transposed_weight",
    F,
    "linear",
    raises=(RuntimeError,),
    diagnosis="Linear multiplying by W instead of W^T (x @ weight, with weight stored (d_out, d_in))",
)
def linear_transposed(x, weight, bias=None):
    return plus_bias(x @ weight, bias)


IN_HALF = "an output computed in the input's 16-bit dtype (upcast to float32, compute, cast back once)"
NO_BIASES = "an output without the biases added (check that each bias given is added)"


@mistake("linear-bias_ignored", F, "linear", diagnosis="Linear ignoring the bias it was given", shows=NO_BIASES)
def linear_bias_ignored(x, weight, bias=None):
    return x @ weight.T


@mistake(
    "linear-stray_bias",
    F,
    "linear",
    diagnosis="Linear with a bias that was never loaded (an unused torch.nn.Linear-style bias left in)",
)
def linear_with_stray_bias(x, weight, bias=None):
    # torch.nn.Linear's default bias, left in and never loaded: U(-1/sqrt(d_in), 1/sqrt(d_in))
    g = torch.Generator().manual_seed(0)
    bound = 1 / math.sqrt(weight.shape[1])
    stray = (torch.rand(weight.shape[0], generator=g) * 2 - 1) * bound
    return plus_bias(x @ weight.T + stray.to(x.dtype), bias)


@mistake(
    "linear-crash_on_2d_or_4d_input",
    F,
    "linear",
    raises=(RuntimeError,),
    diagnosis="Linear written for 3-D input only (it must take any number of leading dimensions)",
)
def linear_only_3d(x, weight, bias=None):
    return plus_bias(torch.einsum("bsi,oi->bso", x, weight), bias)


@mistake("embedding-off_by_one", F, "embedding", diagnosis="Embedding looking up row id - 1 instead of row id")
def embedding_off_by_one(token_ids, weight):
    return weight[token_ids - 1]


@mistake(
    "embedding-ids_assumed_2d",
    F,
    "embedding",
    diagnosis="Embedding that assumes (batch, sequence) ids: the rows reshaped to (ids.shape[0], -1, d_model) "
    "instead of ids.shape + (d_model,)",
)
def embedding_ids_assumed_2d(token_ids, weight):
    return weight[token_ids.reshape(-1)].reshape(token_ids.shape[0], -1, weight.shape[1])


@mistake(
    "embedding-one_hot_matmul_in_bf16",
    F,
    "embedding",
    diagnosis="Embedding as a one-hot matrix product in bfloat16, which rounds the rows",
)
def embedding_one_hot_matmul_in_input_dtype(token_ids, weight):
    one_hot = torch.nn.functional.one_hot(token_ids, weight.shape[0]).to(torch.bfloat16)
    return (one_hot @ weight.to(torch.bfloat16)).to(weight.dtype)


# ---- activations and softmax --------------------------------------------------------------------


@mistake("silu-sigmoid_alone", F, "silu", diagnosis="SiLU returning sigmoid(x) without multiplying by x")
def silu_is_sigmoid(x):
    return torch.sigmoid(x)


@mistake("silu-gaussian_cdf_gate", F, "silu", diagnosis="SiLU replaced by GELU (x * Phi(x) instead of x * sigmoid(x))")
def silu_is_gelu(x):
    return F.gelu(x)


@mistake("silu-relu_instead", F, "silu", diagnosis="SiLU replaced by ReLU")
def silu_is_relu(x):
    return torch.relu(x)


@mistake(
    "silu-sigmoid_as_exp_ratio_overflows",
    F,
    "silu",
    diagnosis="SiLU with sigmoid written as exp(x) / (1 + exp(x)), which is inf / inf = NaN for large x",
)
def silu_as_exp_ratio(x):
    return x * torch.exp(x) / (1 + torch.exp(x))


@mistake(
    "silu-gradient_nan_for_large_negative_x",
    F,
    "silu",
    diagnosis="SiLU whose gradient is NaN for x << 0: exp(-x) overflows to inf inside a quotient (x / (1 + "
    "exp(-x)), or 1 / (1 + exp(-x)) as the sigmoid) and autograd divides inf by inf; the output is right, "
    "torch.sigmoid's gradient stays finite",
)
def silu_as_quotient(x):
    x_c = up(x)
    return (x_c / (1 + torch.exp(-x_c))).to(x.dtype)


@mistake(
    "silu-no_float32_upcast",
    F,
    "silu",
    diagnosis="SiLU computed in the input's 16-bit dtype (sigmoid(x) of float16 x < -10 is a subnormal of a "
    "few bits): upcast to float32, compute, cast back once",
    shows=IN_HALF,  # the exp-ratio mistake, also computed in float16, gives the same output there
)
def silu_no_upcast(x):
    return x * torch.sigmoid(x)  # the reference with its upcast deleted


@mistake(
    "gelu-tanh_for_exact",
    F,
    "gelu",
    diagnosis="GELU using the tanh approximation where the exact erf form was asked for",
)
def gelu_always_tanh(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x_c + 0.044715 * x_c**3)))).to(x.dtype)


@mistake(
    "gelu-exact_for_tanh",
    F,
    "gelu",
    diagnosis="GELU using the exact erf form where the tanh approximation was asked for",
)
def gelu_always_exact(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2)))).to(x.dtype)


@mistake("gelu-sigmoid_approximation", F, "gelu", diagnosis="GELU approximated as x * sigmoid(1.702 x)")
def gelu_sigmoid_approximation(x, approximate="none"):
    x_c = up(x)
    return (x_c * torch.sigmoid(1.702 * x_c)).to(x.dtype)


@mistake(
    "gelu-no_float32_upcast",
    F,
    "gelu",
    diagnosis="GELU computed in the input's 16-bit dtype (in the left tail erfc and sigmoid magnify the "
    "rounding of their argument): upcast to float32, compute, cast back once",
)
def gelu_no_upcast(x, approximate="none"):
    # the reference with its upcast deleted
    if approximate == "tanh":
        return x * torch.sigmoid(2.0 * math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3)))
    return 0.5 * x * torch.erfc(-x / math.sqrt(2.0))


@mistake(
    "softmax-no_max_subtraction",
    F,
    "softmax",
    diagnosis="softmax without subtracting the max first (exp overflows for large logits)",
)
def softmax_without_max_subtraction(x, dim=-1):
    e = torch.exp(up(x))
    return (e / e.sum(dim, keepdim=True)).to(x.dtype)


@mistake(
    "softmax-gradient_nan_on_a_fully_masked_row",
    F,
    "softmax",
    diagnosis="softmax whose gradient is NaN on a fully masked row: the row's -inf entries go through exp or "
    "logsumexp and only the output is repaired afterwards (NaN replaced, or -inf swapped for 0); zero such "
    "rows before anything is computed from them",
    # softmax without the max subtraction is NaN there too (0 / 0): the case shows, it cannot name
    shows="NaN in the gradient of a fully masked row",
)
def softmax_repaired_after_logsumexp(x, dim=-1):
    x_c = up(x)
    lse = torch.logsumexp(x_c, dim, keepdim=True)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    return torch.exp(x_c - lse).to(x.dtype)


@mistake("softmax-ignores_dim", F, "softmax", diagnosis="softmax always over the last dimension, ignoring `dim`")
def softmax_always_last_dim(x, dim=-1):
    return torch.softmax(x, dim=-1)


@mistake(
    "softmax-divides_by_max", F, "softmax", diagnosis="softmax dividing by the largest exp instead of the sum of exps"
)
def softmax_divides_by_max(x, dim=-1):
    e = torch.exp(up(x) - up(x).amax(dim, keepdim=True))
    return (e / e.amax(dim, keepdim=True)).to(x.dtype)


@mistake(
    "softmax-no_float32_upcast",
    F,
    "softmax",
    diagnosis="softmax computed in the input's 16-bit dtype (the sum of exps of a float16 row longer than "
    "65504 overflows to inf): upcast to float32, compute, cast back once",
)
def softmax_no_upcast(x, dim=-1):
    # the reference with its upcast deleted
    row_max = x.amax(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).min)
    exps = torch.exp(x - row_max)
    total = exps.sum(dim=dim, keepdim=True).clamp(min=torch.finfo(x.dtype).tiny)
    return exps * total.reciprocal()


# ---- norms -----------------------------------------------------------------------------------------


def _rmsnorm(x, weight, eps):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-eps_outside_sqrt",
    F,
    "rmsnorm",
    diagnosis="RMSNorm with epsilon outside the square root: x / (sqrt(mean(x^2)) + eps)",
)
def rmsnorm_eps_outside_sqrt(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c / (x_c.pow(2).mean(-1, keepdim=True).sqrt() + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-no_float32_upcast",
    F,
    "rmsnorm",
    diagnosis="RMSNorm computed in the input's 16-bit dtype (x^2 overflows float16): upcast to float32 first",
)
def rmsnorm_no_upcast(x, weight, eps=1e-5, cast_before_gain=False):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


@mistake(
    "rmsnorm-subtracts_the_mean",
    F,
    "rmsnorm",
    diagnosis="RMSNorm that subtracts the mean (that is LayerNorm without a bias)",
)
def rmsnorm_is_layernorm(x, weight, eps=1e-5, cast_before_gain=False):
    return _rmsnorm(up(x) - up(x).mean(-1, keepdim=True), weight, eps).to(x.dtype)


@mistake("rmsnorm-missing_gain", F, "rmsnorm", diagnosis="RMSNorm without multiplying by the gain `weight`")
def rmsnorm_missing_gain(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


@mistake(
    "rmsnorm-sum_not_mean", F, "rmsnorm", diagnosis="RMSNorm with the sum of squares where the mean of squares belongs"
)
def rmsnorm_sum_not_mean(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).sum(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-over_whole_tensor",
    F,
    "rmsnorm",
    diagnosis="RMSNorm taking the mean over the whole tensor instead of the last dimension",
)
def rmsnorm_over_whole_tensor(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean() + eps) * up(weight)).to(x.dtype)


@mistake("rmsnorm-eps_ignored", F, "rmsnorm", diagnosis="RMSNorm ignoring the `eps` it was given (a fixed 1e-5)")
def rmsnorm_eps_ignored(x, weight, eps=1e-5, cast_before_gain=False):
    return _rmsnorm(x, weight, 1e-5)  # the eps argument never reaches the kernel


@mistake(
    "rmsnorm-fixed_reduction_axis",
    F,
    "rmsnorm",
    diagnosis="RMSNorm taking the mean over dimension 2 (the last one only for 3-D input) instead of dimension -1",
    raises=(IndexError,),
)
def rmsnorm_fixed_reduction_axis(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(2, keepdim=True) + eps) * up(weight)).to(x.dtype)


@mistake(
    "rmsnorm-returns_float32",
    F,
    "rmsnorm",
    diagnosis=WRONG_DTYPE,
    raises=(TypeError,),  # a float32 output meets bfloat16 weights in the next layer
)
def rmsnorm_returns_float32(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = x.float() if x.dtype != torch.float64 else x
    return x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)


@mistake("layernorm-eps_ignored", F, "layernorm", diagnosis="LayerNorm ignoring the `eps` it was given (a fixed 1e-5)")
def layernorm_eps_ignored(x, weight, bias, eps=1e-5):
    x_c = up(x)
    out = torch.nn.functional.layer_norm(x_c, x.shape[-1:], up(weight), None if bias is None else up(bias), 1e-5)
    return out.to(x.dtype)


@mistake(
    "layernorm-unbiased_variance",
    F,
    "layernorm",
    diagnosis="LayerNorm with the unbiased variance (divide by d_model - 1 instead of d_model)",
)
def layernorm_unbiased_variance(x, weight, bias, eps=1e-5):
    x_c = up(x)
    out = (x_c - x_c.mean(-1, keepdim=True)) * torch.rsqrt(x_c.var(-1, keepdim=True, unbiased=True) + eps)
    return (out * up(weight) + (0 if bias is None else up(bias))).to(x.dtype)


@mistake(
    "layernorm-no_centering", F, "layernorm", diagnosis="LayerNorm without subtracting the mean (RMSNorm plus a bias)"
)
def layernorm_no_centering(x, weight, bias, eps=1e-5):
    return (up(_rmsnorm(x, weight, eps)) + (0 if bias is None else up(bias))).to(x.dtype)


@mistake("layernorm-missing_bias", F, "layernorm", diagnosis="LayerNorm without adding the bias")
def layernorm_missing_bias(x, weight, bias, eps=1e-5):
    return torch.nn.functional.layer_norm(up(x), x.shape[-1:], up(weight), None, eps).to(x.dtype)


@mistake(
    "layernorm-no_float32_upcast",
    F,
    "layernorm",
    diagnosis="LayerNorm computed in bfloat16 (the mean of large values loses the centred part): upcast to "
    "float32 first",
)
def layernorm_no_upcast(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + (0 if bias is None else bias)


@mistake(
    "layernorm-variance_as_mean_square_minus_square_mean",
    F,
    "layernorm",
    diagnosis="LayerNorm with the variance as mean(x^2) - mean(x)^2, which cancels in float32 when the mean "
    "is large against the spread: use mean((x - mean)^2)",
)
def layernorm_variance_by_cancellation(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean = x_c.mean(-1, keepdim=True)
    var = x_c.pow(2).mean(-1, keepdim=True) - mean.pow(2)  # two numbers of ~mean^2, subtracted
    out = (x_c - mean) * torch.rsqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


# ---- feed-forward networks and the FFN block ---------------------------------------------------------


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
