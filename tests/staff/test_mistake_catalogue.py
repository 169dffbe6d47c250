"""The snapshot tests, run against a catalogue of plausible wrong implementations.

Each mistake replaces one kernel of `cs336_basics.nn.functional` (or one module method) with a
wrong version written here, then every public fixture case is run through the adapters with
the tolerance stored in its fixture. A mistake is caught when a case fails the way the mistake
says it should: a wrong output (the comparison fails), or the exception it names (a transposed
weight cannot multiply a non-square input). Any other exception is a bug in the catalogue and
is raised. The accepted variants are correct implementations written differently; they must
pass every case, which shows the tolerances are not tighter than the arithmetic allows.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import FIXTURES_DIR, fixture_names, load_fixture
from cs336_basics.nn import FFNBlock
from cs336_basics.nn import functional as F
from cs336_basics.staff.cases import PUBLIC_CASES
from cs336_basics.testing import compare

from .. import adapters

FIXTURES = {c.name: load_fixture(c.name) for c in PUBLIC_CASES}
WRONG_OUTPUT = "wrong output"


def failures(expect: tuple[type[BaseException], ...] = (), first_for: str | None = None) -> dict[str, str]:
    """{case: how it failed} over the public cases whose snapshot check fails with the code as it
    is now: WRONG_OUTPUT, or the name of an exception of a type in `expect` (others propagate).
    With `first_for=component`, that component's cases run first and the search stops at the
    first failure (enough to show a mistake is caught, and fast)."""
    failed = {}
    order = sorted(FIXTURES, key=lambda case: (FIXTURES[case].component != first_for, case))
    for case in order:
        fx = FIXTURES[case]
        try:
            with torch.no_grad():
                actual = getattr(adapters, fx.adapter)(**fx.kwargs)
            if not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok:
                failed[case] = WRONG_OUTPUT
        except expect as e:
            failed[case] = type(e).__name__
        if failed and first_for is not None:
            break
    return failed


def up(x):
    return x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)


# ---- wrong implementations -------------------------------------------------------------


def _plus(y, bias):
    return y if bias is None else y + bias


def linear_transposed(x, weight, bias=None):
    return _plus(x @ weight, bias)  # W instead of W^T


def linear_with_stray_bias(x, weight, bias=None):
    # torch.nn.Linear's default bias, left in and never loaded: U(-1/sqrt(d_in), 1/sqrt(d_in))
    g = torch.Generator().manual_seed(0)
    bound = 1 / math.sqrt(weight.shape[1])
    stray = (torch.rand(weight.shape[0], generator=g) * 2 - 1) * bound
    return _plus(x @ weight.T + stray.to(x.dtype), bias)


def linear_only_3d(x, weight, bias=None):
    return _plus(torch.einsum("bsi,oi->bso", x, weight), bias)  # crashes on 2-D or 4-D input


def embedding_off_by_one(token_ids, weight):
    return weight[token_ids - 1]


def embedding_one_hot_matmul_in_input_dtype(token_ids, weight):
    one_hot = torch.nn.functional.one_hot(token_ids, weight.shape[0]).to(torch.bfloat16)
    return (one_hot @ weight.to(torch.bfloat16)).to(weight.dtype)  # rounds the rows to bf16


def silu_is_sigmoid(x):
    return torch.sigmoid(x)


def silu_is_gelu(x):
    return F.gelu(x)


def silu_as_exp_ratio(x):
    return x * torch.exp(x) / (1 + torch.exp(x))  # inf / inf = NaN for large x


def silu_is_relu(x):
    return torch.relu(x)


def gelu_always_tanh(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x_c + 0.044715 * x_c**3)))).to(x.dtype)


def gelu_always_exact(x, approximate="none"):
    x_c = up(x)
    return (0.5 * x_c * (1 + torch.erf(x_c / math.sqrt(2)))).to(x.dtype)


def gelu_sigmoid_approximation(x, approximate="none"):
    x_c = up(x)
    return (x_c * torch.sigmoid(1.702 * x_c)).to(x.dtype)


def softmax_without_max_subtraction(x, dim=-1):
    e = torch.exp(up(x))
    return (e / e.sum(dim, keepdim=True)).to(x.dtype)


def softmax_always_last_dim(x, dim=-1):
    return torch.softmax(x, dim=-1)


def softmax_divides_by_max(x, dim=-1):
    e = torch.exp(up(x) - up(x).amax(dim, keepdim=True))
    return (e / e.amax(dim, keepdim=True)).to(x.dtype)


def rmsnorm_eps_outside_sqrt(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c / (x_c.pow(2).mean(-1, keepdim=True).sqrt() + eps) * up(weight)).to(x.dtype)


def rmsnorm_no_upcast(x, weight, eps=1e-5, cast_before_gain=False):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rmsnorm_is_layernorm(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    x_c = x_c - x_c.mean(-1, keepdim=True)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


def rmsnorm_missing_gain(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rmsnorm_sum_not_mean(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).sum(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


def rmsnorm_over_whole_tensor(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean() + eps) * up(weight)).to(x.dtype)


def rmsnorm_eps_ignored(x, weight, eps=1e-5, cast_before_gain=False):
    return _rmsnorm(x, weight, 1e-5)  # the eps argument never reaches the kernel


def _rmsnorm(x, weight, eps):
    x_c = up(x)
    return (x_c * torch.rsqrt(x_c.pow(2).mean(-1, keepdim=True) + eps) * up(weight)).to(x.dtype)


def layernorm_unbiased_variance(x, weight, bias, eps=1e-5):
    x_c = up(x)
    out = (x_c - x_c.mean(-1, keepdim=True)) * torch.rsqrt(x_c.var(-1, keepdim=True, unbiased=True) + eps)
    return (out * up(weight) + (0 if bias is None else up(bias))).to(x.dtype)


def layernorm_no_centering(x, weight, bias, eps=1e-5):
    return (up(_rmsnorm(x, weight, eps)) + (0 if bias is None else up(bias))).to(x.dtype)


def layernorm_missing_bias(x, weight, bias, eps=1e-5):
    return torch.nn.functional.layer_norm(up(x), x.shape[-1:], up(weight), None, eps).to(x.dtype)


def layernorm_no_upcast(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def swiglu_w1_w3_swapped(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w3)) * F.linear(x, w1), w2)


def swiglu_silu_on_up_branch_too(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1)) * F.silu(F.linear(x, w3)), w2)


def swiglu_gelu_for_silu(x, w1, w2, w3, activation="silu"):
    return F.linear(F.gelu(F.linear(x, w1)) * F.linear(x, w3), w2)


def swiglu_sigmoid_for_silu(x, w1, w2, w3, activation="silu"):
    return F.linear(torch.sigmoid(F.linear(x, w1)) * F.linear(x, w3), w2)


def swiglu_without_gate(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1)), w2)


def swiglu_silu_after_product(x, w1, w2, w3, activation="silu"):
    return F.linear(F.silu(F.linear(x, w1) * F.linear(x, w3)), w2)


def positionwise_ignores_biases(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.gelu(F.linear(x, w1)), w2)


def positionwise_relu_for_gelu(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.relu(F.linear(x, w1) + b1), w2) + b2


def positionwise_bias_after_activation(x, w1, b1, w2, b2, activation="gelu"):
    return F.linear(F.gelu(F.linear(x, w1)) + b1, w2) + b2


def block_post_norm(self, x):
    return self.ffn_norm(x + self.feed_forward(x))


def block_no_residual(self, x):
    return self.feed_forward(self.ffn_norm(x))


def block_residual_of_normed_input(self, x):
    h = self.ffn_norm(x)
    return h + self.feed_forward(h)


# ---- correct implementations written differently ---------------------------------------


def linear_matmul(x, weight, bias=None):
    return _plus(x @ weight.transpose(-1, -2), bias)


def silu_exp_division(x):
    x_c = up(x)
    return (x_c / (1 + torch.exp(-x_c))).to(x.dtype)


def softmax_logsumexp(x, dim=-1):
    x_c = up(x)
    lse = torch.logsumexp(x_c, dim, keepdim=True)
    lse = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    return torch.exp(x_c - lse).to(x.dtype)


def rmsnorm_meta_cast_order(x, weight, eps=1e-5, cast_before_gain=False):
    x_c = up(x)
    normed = (x_c / torch.sqrt(x_c.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return normed * weight.to(x.dtype)  # Meta / Hugging Face: cast, then multiply by the gain


def layernorm_torch_var(x, weight, bias, eps=1e-5):
    x_c = up(x)
    mean, var = x_c.mean(-1, keepdim=True), x_c.var(-1, keepdim=True, unbiased=False)
    out = (x_c - mean) / torch.sqrt(var + eps) * up(weight)
    return (out + (0 if bias is None else up(bias))).to(x.dtype)


def swiglu_in_three_lines(x, w1, w2, w3, activation="silu"):
    gate = x @ w1.T
    gate = gate * torch.sigmoid(gate.float()).to(gate.dtype)  # SiLU, sigmoid in float32
    return (gate * (x @ w3.T)) @ w2.T


@dataclass(frozen=True)
class Patch:
    name: str  # component-mistake, used as the test id
    owner: object  # the module or class whose attribute is replaced
    attribute: str
    replacement: Callable
    raises: tuple[type[BaseException], ...] = ()  # exceptions that are this mistake's failure, besides a wrong output


MISTAKES = [
    Patch("linear-transposed_weight", F, "linear", linear_transposed, raises=(RuntimeError,)),
    Patch("linear-stray_bias", F, "linear", linear_with_stray_bias),
    Patch("linear-crash_on_2d_or_4d_input", F, "linear", linear_only_3d, raises=(RuntimeError,)),
    Patch("embedding-off_by_one", F, "embedding", embedding_off_by_one),
    Patch("embedding-one_hot_matmul_in_bf16", F, "embedding", embedding_one_hot_matmul_in_input_dtype),
    Patch("silu-sigmoid_alone", F, "silu", silu_is_sigmoid),
    Patch("silu-gaussian_cdf_gate", F, "silu", silu_is_gelu),
    Patch("silu-relu_instead", F, "silu", silu_is_relu),
    Patch("silu-sigmoid_as_exp_ratio_overflows", F, "silu", silu_as_exp_ratio),
    Patch("gelu-tanh_for_exact", F, "gelu", gelu_always_tanh),
    Patch("gelu-exact_for_tanh", F, "gelu", gelu_always_exact),
    Patch("gelu-sigmoid_approximation", F, "gelu", gelu_sigmoid_approximation),
    Patch("softmax-no_max_subtraction", F, "softmax", softmax_without_max_subtraction),
    Patch("softmax-ignores_dim", F, "softmax", softmax_always_last_dim),
    Patch("softmax-divides_by_max", F, "softmax", softmax_divides_by_max),
    Patch("rmsnorm-eps_outside_sqrt", F, "rmsnorm", rmsnorm_eps_outside_sqrt),
    Patch("rmsnorm-no_float32_upcast", F, "rmsnorm", rmsnorm_no_upcast),
    Patch("rmsnorm-subtracts_the_mean", F, "rmsnorm", rmsnorm_is_layernorm),
    Patch("rmsnorm-missing_gain", F, "rmsnorm", rmsnorm_missing_gain),
    Patch("rmsnorm-sum_not_mean", F, "rmsnorm", rmsnorm_sum_not_mean),
    Patch("rmsnorm-over_whole_tensor", F, "rmsnorm", rmsnorm_over_whole_tensor),
    Patch("rmsnorm-eps_ignored", F, "rmsnorm", rmsnorm_eps_ignored),
    Patch("layernorm-unbiased_variance", F, "layernorm", layernorm_unbiased_variance),
    Patch("layernorm-no_centering", F, "layernorm", layernorm_no_centering),
    Patch("layernorm-missing_bias", F, "layernorm", layernorm_missing_bias),
    Patch("layernorm-no_float32_upcast", F, "layernorm", layernorm_no_upcast),
    Patch("swiglu-w1_w3_swapped", F, "swiglu_ffn", swiglu_w1_w3_swapped),
    Patch("swiglu-activation_on_up_branch_too", F, "swiglu_ffn", swiglu_silu_on_up_branch_too),
    Patch("swiglu-gaussian_cdf_gate", F, "swiglu_ffn", swiglu_gelu_for_silu),
    Patch("swiglu-sigmoid_gate", F, "swiglu_ffn", swiglu_sigmoid_for_silu),
    Patch("swiglu-no_gate", F, "swiglu_ffn", swiglu_without_gate),
    Patch("swiglu-activation_after_product", F, "swiglu_ffn", swiglu_silu_after_product),
    Patch("positionwise_ffn-ignores_biases", F, "positionwise_ffn", positionwise_ignores_biases),
    Patch("positionwise_ffn-relu_activation", F, "positionwise_ffn", positionwise_relu_for_gelu),
    Patch("positionwise_ffn-bias_after_activation", F, "positionwise_ffn", positionwise_bias_after_activation),
    Patch("ffn_block-post_norm", FFNBlock, "forward", block_post_norm),
    Patch("ffn_block-no_residual", FFNBlock, "forward", block_no_residual),
    Patch("ffn_block-residual_of_normed_input", FFNBlock, "forward", block_residual_of_normed_input),
]

VARIANTS = [
    Patch("linear-matmul", F, "linear", linear_matmul),
    Patch("silu-exp_division", F, "silu", silu_exp_division),
    Patch("softmax-logsumexp", F, "softmax", softmax_logsumexp),
    Patch("rmsnorm-meta_cast_order", F, "rmsnorm", rmsnorm_meta_cast_order),
    Patch("layernorm-torch_var", F, "layernorm", layernorm_torch_var),
    Patch("swiglu-matmuls", F, "swiglu_ffn", swiglu_in_three_lines),
]


def test_catalogue_covers_every_public_fixture_and_the_reference_passes_them_all():
    assert sorted(FIXTURES) == sorted(p.stem for p in Path(FIXTURES_DIR).glob("*.safetensors"))
    assert sorted(FIXTURES) == sorted(n for c in COMPONENTS for n in fixture_names(c))
    assert failures() == {}


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_catalogue_mistake_fails_a_snapshot_test(mistake, monkeypatch):
    monkeypatch.setattr(mistake.owner, mistake.attribute, mistake.replacement)
    assert failures(mistake.raises, first_for=mistake.name.split("-")[0]), f"no snapshot test catches {mistake.name}"


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_catalogue_correct_variant_passes_every_snapshot_test(variant, monkeypatch):
    monkeypatch.setattr(variant.owner, variant.attribute, variant.replacement)
    assert failures() == {}


if __name__ == "__main__":  # uv run python -m tests.staff.test_mistake_catalogue: which cases catch what
    for patch in MISTAKES + VARIANTS:
        original = getattr(patch.owner, patch.attribute)
        setattr(patch.owner, patch.attribute, patch.replacement)
        try:
            caught = failures(patch.raises)
        finally:
            setattr(patch.owner, patch.attribute, original)
        kind = "mistake" if patch in MISTAKES else "variant"
        print(f"{kind:8s} {patch.name:44s} fails {len(caught):2d}: {', '.join(f'{c} ({how})' for c, how in caught.items())}")
