"""SiLU, GELU and softmax: their mistakes, accepted variants and alternative solutions."""

import math

import torch

from cs336_basics.nn import functional as F

from . import alternative, mistake, up, variant

# ---- silu ----------------------------------------------------------------------------------------


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


IN_HALF = "an output computed in the input's 16-bit dtype (upcast to float32, compute, cast back once)"


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


@variant("silu-stable_sigmoid_by_sign", F, "silu")
def silu_stable_sigmoid_by_sign(x):
    # the sigmoid from exp(-|x|), which never overflows (nor does its gradient): 1 / (1 + e) for
    # x >= 0, e / (1 + e) below
    x_c = up(x)
    e = torch.exp(-x_c.abs())
    return (x_c * torch.where(x_c >= 0, 1 / (1 + e), e / (1 + e))).to(x.dtype)


alternative(
    "silu",
    "silu",
    """
    wide = x.double() if x.dtype == torch.float64 else x.float()
    gate = 1.0 / (1.0 + (-wide).exp())
    return (wide * gate).type_as(x)
    """,
)


# ---- gelu ----------------------------------------------------------------------------------------


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


@variant("gelu-one_plus_erf", F, "gelu")
def gelu_one_plus_erf(x, approximate="none"):
    # the paper's 0.5 x (1 + erf(x / sqrt 2)), as torch's F.gelu computes it: 1 + erf cancels to 0
    # for x << 0 (-0.0 at x = -10, where the exact value is -7.6e-23), a loss of 1e-22 on the scale
    # of any input that is not all in the far tail
    if approximate == "tanh":
        x_c = up(x)
        u = math.sqrt(2.0 / math.pi) * (x_c + 0.044715 * x_c.pow(3))
        return (0.5 * x_c * (1 + torch.tanh(u))).to(x.dtype)
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2.0)))).to(x.dtype)


# ---- softmax -------------------------------------------------------------------------------------


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


@mistake(
    "softmax-sum_clamped_at_tiny",
    F,
    "softmax",
    diagnosis="softmax that clamps a fully masked row's zero sum at the smallest positive float: the output "
    "is zeros, but the gradient g / tiny overflows to inf once |g| > 4, and inf x exp(-inf) is NaN; replace "
    "a zero sum by 1 instead (every other row's sum is at least 1)",
    shows="NaN in the gradient of a fully masked row",
)
def softmax_sum_clamped_at_tiny(x, dim=-1):
    x_c = up(x)
    exps = torch.exp(x_c - x_c.amax(dim=dim, keepdim=True).clamp(min=torch.finfo(x_c.dtype).min))
    return (exps / exps.sum(dim=dim, keepdim=True).clamp(min=torch.finfo(x_c.dtype).tiny)).to(x.dtype)


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


@variant("softmax-logsumexp", F, "softmax")
def softmax_logsumexp(x, dim=-1):
    # exp(x - logsumexp(x)); a fully masked row's logsumexp is taken over zeros instead, so no
    # -inf row reaches it (its output exp(-inf) = 0, its gradient 0)
    x_c = up(x)
    dead = torch.isneginf(x_c).all(dim, keepdim=True)
    lse = torch.logsumexp(x_c.masked_fill(dead, 0.0), dim, keepdim=True)
    return torch.exp(x_c - lse).to(x.dtype)


alternative(
    "softmax",
    "softmax",
    """
    work = x.double() if x.dtype == torch.float64 else x.float()
    peak = torch.max(work, dim=dim, keepdim=True).values
    peak = torch.nan_to_num(peak, neginf=0.0)
    e = (work - peak).exp()
    denominator = e.sum(dim, keepdim=True)
    denominator[denominator == 0] = 1.0
    return (e / denominator).type_as(x)
    """,
)
