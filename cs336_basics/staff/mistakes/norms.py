"""RMSNorm and LayerNorm: their mistakes (LayerNorm's initialisation too), accepted variants and
alternative solutions."""

import torch
from torch import nn

from cs336_basics.nn import LayerNorm
from cs336_basics.nn import functional as F
from cs336_basics.testing import WRONG_DTYPE

from . import alternative, mistake, up, variant

# ---- rmsnorm -------------------------------------------------------------------------------------


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


@variant("rmsnorm-meta_cast_order", F, "rmsnorm")
def rmsnorm_meta_cast_order(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    normed = (x_c / torch.sqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return normed * weight.to(x.dtype)  # Meta / Hugging Face: cast, then multiply by the gain


alternative(
    "rmsnorm",
    "rmsnorm",
    """
    work = x.double() if x.dtype == torch.float64 else x.float()
    d = work.shape[-1]
    square_sum = (work * work).sum(dim=-1, keepdim=True)
    root_mean = torch.sqrt(square_sum / d + eps)
    g = weight.double() if x.dtype == torch.float64 else weight.float()
    return (g * (work / root_mean)).type_as(x)
    """,
)


# ---- layernorm -----------------------------------------------------------------------------------


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


# its constructor's initialisation (Linear's, in linear.py, says what the init-check cases test)


@mistake(
    "layernorm-init_bias_ones",
    LayerNorm,
    "__init__",
    diagnosis="LayerNorm with its bias initialised to ones instead of zeros",
)
def layernorm_init_bias_ones(self, d_model, eps=1e-5, bias=True, device=None, dtype=None):
    nn.Module.__init__(self)
    self.d_model, self.eps = d_model, eps
    self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
    if bias:
        self.bias = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
    else:
        self.register_parameter("bias", None)


@variant("layernorm-torch_var", F, "layernorm")
def layernorm_torch_var(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean, var = x_c.mean(-1, keepdim=True), x_c.var(-1, keepdim=True, unbiased=False)
    out = (x_c - mean) / torch.sqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


alternative(
    "layernorm",
    "layernorm",
    """
    work = x.double() if x.dtype == torch.float64 else x.float()
    n = work.shape[-1]
    mu = work.sum(-1, keepdim=True) / n
    centred = work - mu
    sigma2 = (centred * centred).sum(-1, keepdim=True) / n
    y = centred / (sigma2 + eps).sqrt()
    y = y * weight.type_as(y)
    if bias is None:
        return y.type_as(x)
    return (y + bias.type_as(y)).type_as(x)
    """,
)
