"""The feed-forward networks, SwiGLU, the position-wise FFN and the pre-norm FFN block: the builders
of their inputs, then their cases and what they grade of the public tests, then their mistakes,
accepted variants and alternative solutions."""

from functools import partial

import torch

from cs336_basics.nn import FFNBlock
from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.case import BF16, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, linear_weight, randn
from cs336_basics.staff.cases.linear import NO_BIASES
from cs336_basics.staff.mistakes import alternative, mistake, plus_bias, up, variant


def swiglu_case(batch: tuple[int, ...], d_model: int, d_ff: int, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(rng, d_ff, d_model),
        w2_weight=linear_weight(rng, d_model, d_ff),
        w3_weight=linear_weight(rng, d_ff, d_model),
        in_features=randn(rng, *batch, d_model, std=x_std),
    )


def positionwise_case(batch: tuple[int, ...], d_model: int, d_ff: int, activation: str = "gelu") -> Make:
    return lambda rng: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(rng, d_ff, d_model),
        b1=randn(rng, d_ff, std=0.5),
        w2_weight=linear_weight(rng, d_model, d_ff),
        b2=randn(rng, d_model, std=0.5),
        in_features=randn(rng, *batch, d_model),
        activation=activation,
    )


def ffn_block_case(
    batch: tuple[int, ...],
    d_model: int,
    d_ff: int,
    norm: str,
    ffn: str,
    activation: str,
    bias: bool = False,
    eps: float = 1e-5,
) -> Make:
    def make(rng):
        w = {"ffn_norm.weight": randn(rng, d_model, std=0.5, mean=1.0)}
        if norm == "layernorm" and bias:
            w["ffn_norm.bias"] = randn(rng, d_model, std=0.5)
        w["feed_forward.w1.weight"] = linear_weight(rng, d_ff, d_model)
        w["feed_forward.w2.weight"] = linear_weight(rng, d_model, d_ff)
        if ffn == "swiglu":
            w["feed_forward.w3.weight"] = linear_weight(rng, d_ff, d_model)
        elif bias:
            w["feed_forward.w1.bias"] = randn(rng, d_ff, std=0.5)
            w["feed_forward.w2.bias"] = randn(rng, d_model, std=0.5)
        return dict(
            d_model=d_model,
            d_ff=d_ff,
            weights=w,
            in_features=randn(rng, *batch, d_model, std=2.0, mean=0.5),
            norm=norm,
            ffn=ffn,
            activation=activation,
            eps=eps,
            bias=bias,
        )

    return make


swiglu = partial(Case, component="swiglu", adapter="run_swiglu")
positionwise_feedforward = partial(Case, component="positionwise_ffn", adapter="run_positionwise_feedforward")
positionwise_without_biases = partial(
    Case, component="positionwise_ffn", adapter="run_positionwise_feedforward_without_biases"
)


def _no_biases(kw: dict) -> None:
    del kw["b1"], kw["b2"]


def _geglu(kw: dict) -> None:
    kw["activation"] = "gelu"


ffn_block = partial(Case, component="ffn_block", adapter="run_ffn_block")

CASES = [
    swiglu("swiglu", seed=18, make=swiglu_case(B, 64, 128), floor=1.6e-6),
    swiglu("swiglu_4d", seed=19, make=swiglu_case((2, 2, 3), 40, 96, x_std=3.0), floor=9.7e-7),
    swiglu("swiglu_bf16", seed=20, make=swiglu_case(B, 64, 128), floor=1.9e-2, dtype=BF16),
    swiglu("swiglu_2d_f64", seed=112, make=swiglu_case((6,), 24, 72), floor=6.0e-16, dtype=F64),
    # the activation argument gates: GeGLU (Shazeer 2020) with "gelu"
    swiglu("swiglu_geglu", seed=208, make=edited(swiglu_case((4, 3), 32, 64), _geglu), floor=9.4e-7),
    # hidden: d_ff not a multiple of 64 with odd d_model; 1-D; bfloat16
    swiglu("swiglu_odd", hidden=True, seed=1071, make=swiglu_case((5,), 33, 100), floor=4.0e-7),
    swiglu("swiglu_1d", hidden=True, seed=1072, make=swiglu_case((), 16, 45, x_std=2.0), floor=3.1e-7),
    swiglu("swiglu_odd_bf16", hidden=True, seed=1073, make=swiglu_case((3, 4), 24, 100), floor=1.7e-2, dtype=BF16),
    positionwise_feedforward("positionwise_ffn", seed=21, make=positionwise_case(B, 64, 256), floor=1.2e-6),
    # witness: an activation other than the default GELU, SiLU (Swish; an FFN ignoring `activation` fails)
    positionwise_feedforward(
        "positionwise_ffn_swish", seed=40, make=positionwise_case(B, 64, 256, activation="silu"), floor=1.5e-6
    ),
    positionwise_feedforward(
        "positionwise_ffn_relu_2d_f64",
        seed=113,
        make=positionwise_case((6,), 24, 40, activation="relu"),
        floor=4.0e-16,
        dtype=F64,
    ),
    positionwise_feedforward(
        "positionwise_ffn_tanh_4d_bf16",
        seed=114,
        make=positionwise_case((2, 3, 4), 16, 48, activation="gelu_tanh"),
        floor=1.1e-2,
        dtype=BF16,
    ),
    # witness: in float64 the tanh approximation is 1e-4 away from the exact GELU, far beyond the
    # tolerance (in bfloat16, above, the two round alike)
    positionwise_feedforward(
        "positionwise_ffn_tanh_f64",
        seed=199,
        make=positionwise_case((5,), 12, 24, activation="gelu_tanh"),
        floor=4.1e-16,
        dtype=F64,
    ),
    # PositionWiseFFN(bias=False): two weights and no bias parameters, which the strict load checks
    positionwise_without_biases(
        "positionwise_ffn_without_biases",
        seed=207,
        make=edited(positionwise_case((3, 4), 16, 48, activation="silu"), _no_biases),
        floor=7.7e-7,
    ),
    # hidden: odd sizes; ReLU on 4-D input; tanh-GELU in bfloat16
    positionwise_feedforward(
        "positionwise_ffn_odd", hidden=True, seed=1081, make=positionwise_case((5,), 33, 100), floor=5.7e-7
    ),
    positionwise_feedforward(
        "positionwise_ffn_relu_4d",
        hidden=True,
        seed=1082,
        make=positionwise_case((2, 3, 4), 12, 20, activation="relu"),
        floor=1.6e-7,
    ),
    positionwise_feedforward(
        "positionwise_ffn_tanh_bf16",
        hidden=True,
        seed=1083,
        make=positionwise_case((4, 6), 16, 40, activation="gelu_tanh"),
        floor=7.4e-3,
        dtype=BF16,
    ),
    ffn_block("ffn_block_llama", seed=22, make=ffn_block_case(B, 64, 192, "rmsnorm", "swiglu", "silu"), floor=6.1e-7),
    ffn_block(
        "ffn_block_original",
        seed=23,
        make=ffn_block_case(B, 64, 256, "layernorm", "positionwise", "gelu", bias=True),
        floor=9.1e-7,  # PyTorch's generic CPU kernels (ATEN_CPU_CAPABILITY=default); 4.7e-7 on x86-64's
    ),
    ffn_block(
        "ffn_block_original_2d_f64_eps",
        seed=115,
        make=ffn_block_case((6,), 24, 64, "layernorm", "positionwise", "relu", bias=True, eps=0.5),
        floor=4.7e-16,
        dtype=F64,
    ),
    ffn_block(
        "ffn_block_llama_4d_bf16",
        seed=116,
        make=ffn_block_case((2, 2, 3), 32, 96, "rmsnorm", "swiglu", "silu", eps=1e-6),
        floor=6.2e-3,
        dtype=BF16,
    ),
    # witness (tests/staff/test_argument_flow.py): a block that builds its SwiGLU without
    # `activation` (GeGLU comes out as SwiGLU) or its RMSNorm without `eps` fails here; the cases
    # above gate with SiLU only and their one other eps (1e-6, bfloat16) is below rounding
    ffn_block(
        "ffn_block_geglu_eps",
        seed=157,
        make=ffn_block_case((3, 5), 32, 96, "rmsnorm", "swiglu", "gelu", eps=0.5),
        floor=3.5e-7,
    ),
    # witness (test_argument_flow.py): a block that builds its LayerNorm or PositionWiseFFN without
    # `bias` (both default to biases) fails here; the cases above all have biases
    ffn_block(
        "ffn_block_original_no_bias",
        seed=158,
        make=ffn_block_case((4, 6), 24, 80, "layernorm", "positionwise", "silu"),
        floor=3.5e-7,
    ),
    # hidden: both configs with odd d_ff; LayerNorm without bias + ReLU on a 1-D input; bfloat16
    ffn_block(
        "ffn_block_ln_pw_odd",
        hidden=True,
        seed=1091,
        make=ffn_block_case((5,), 33, 100, "layernorm", "positionwise", "gelu", bias=True),
        floor=1.6e-7,
    ),
    ffn_block(
        "ffn_block_rms_glu_4d_odd",
        hidden=True,
        seed=1092,
        make=ffn_block_case((2, 3, 4), 20, 100, "rmsnorm", "swiglu", "silu"),
        floor=1.2e-7,
    ),
    ffn_block(
        "ffn_block_ln_pw_nobias_1d",
        hidden=True,
        seed=1093,
        make=ffn_block_case((), 16, 36, "layernorm", "positionwise", "relu"),
        floor=1.3e-7,
    ),
    ffn_block(
        "ffn_block_rms_glu_bf16",
        hidden=True,
        seed=1094,
        make=ffn_block_case((4, 6), 24, 100, "rmsnorm", "swiglu", "silu"),
        floor=2.6e-3,
        dtype=BF16,
    ),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "swiglu": {
        "test_swiglu_gates_with_its_activation_argument": ("swiglu_geglu",),
        "test_swiglu_matches_fixture": ("swiglu", "swiglu_4d", "swiglu_bf16", "swiglu_2d_f64"),
        "test_swiglu_kernel_matches_torch_builtin": ("swiglu_2d_f64", "swiglu_odd"),
        "test_swiglu_module_state_dict_keys_follow_meta_names": ("swiglu",),
        "test_swiglu_output_has_the_input_s_shape_and_dtype": ("swiglu_4d", "swiglu_1d"),
        "test_swiglu_of_one_unit_by_hand": ("swiglu", "swiglu_2d_f64"),
        "test_swiglu_computes_each_position_alone": ("swiglu_4d", "swiglu"),
        "test_swiglu_output_is_proportional_to_w3": ("swiglu", "swiglu_2d_f64"),
        "test_swiglu_returns_bfloat16_for_bfloat16_input": ("swiglu_bf16", "swiglu_odd_bf16"),
    },
    "positionwise_ffn": {
        "test_positionwise_ffn_module_without_biases": ("positionwise_ffn_without_biases",),
        "test_positionwise_ffn_matches_fixture": (
            "positionwise_ffn",
            "positionwise_ffn_swish",
            "positionwise_ffn_relu_2d_f64",
        ),
        "test_positionwise_ffn_kernel_matches_torch_builtin": ("positionwise_ffn_relu_2d_f64", "positionwise_ffn_odd"),
        "test_positionwise_ffn_module_state_dict_keys": ("positionwise_ffn", "positionwise_ffn_relu_4d"),
        "test_positionwise_ffn_output_has_the_input_s_shape_and_dtype": (
            "positionwise_ffn_relu_4d",
            "positionwise_ffn_tanh_4d_bf16",
        ),
        "test_positionwise_ffn_of_one_unit_by_hand": ("positionwise_ffn", "positionwise_ffn_odd"),
        "test_positionwise_ffn_computes_each_position_alone": (
            "positionwise_ffn_tanh_4d_bf16",
            "positionwise_ffn_relu_4d",
        ),
        "test_positionwise_ffn_adds_b2_to_the_output": ("positionwise_ffn", "positionwise_ffn_relu_2d_f64"),
        "test_positionwise_ffn_adds_b1_before_the_activation": ("positionwise_ffn", "positionwise_ffn_relu_2d_f64"),
        "test_positionwise_ffn_uses_its_activation_argument": (
            "positionwise_ffn_swish",
            "positionwise_ffn_relu_2d_f64",
        ),
        "test_positionwise_ffn_returns_bfloat16_for_bfloat16_input": (
            "positionwise_ffn_tanh_4d_bf16",
            "positionwise_ffn_tanh_bf16",
        ),
    },
    "ffn_block": {
        "test_ffn_block_matches_fixture": ("ffn_block_llama", "ffn_block_original", "ffn_block_original_2d_f64_eps"),
        "test_ffn_block_matches_torch_builtins": ("ffn_block_original_2d_f64_eps", "ffn_block_ln_pw_odd"),
        "test_ffn_block_is_identity_plus_ffn_of_norm": ("ffn_block_llama", "ffn_block_original"),
        "test_ffn_block_state_dict_keys_are_cs336_block_names_and_rename_to_meta_names": ("ffn_block_llama",),
        "test_ffn_block_output_has_the_input_s_shape_and_dtype": ("ffn_block_llama", "ffn_block_ln_pw_nobias_1d"),
        "test_ffn_block_adds_the_input_back": ("ffn_block_llama", "ffn_block_original"),
        "test_ffn_block_is_x_plus_the_ffn_of_the_normalised_x": ("ffn_block_llama", "ffn_block_original"),
        "test_ffn_block_normalises_with_the_config_s_eps": ("ffn_block_original_2d_f64_eps", "ffn_block_geglu_eps"),
        "test_ffn_block_returns_bfloat16_for_bfloat16_input": ("ffn_block_llama_4d_bf16", "ffn_block_rms_glu_bf16"),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_swiglu_module_default_d_ff_is_8_thirds_rounded_up_to_64": "the given width rule (nn.ffn_width)",
    "test_ffn_block_config_default_d_ff_uses_the_8_thirds_rule": "the given width rule (nn.ffn_width)",
    "test_ffn_block_config_rejects_bad_values": "the given argument checks of FFNBlockConfig",
    "test_ffn_block_leaves_its_input_unchanged": "the graded cases compare the output only, and x written in place still returns the right output",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


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
