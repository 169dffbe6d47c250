"""Hidden fixture cases: for grading only, written to hidden_fixtures/, never shipped to students.

They reuse the public builders with other seeds (1000+) and other shapes: odd sizes, 1-D and
4-D inputs, d_ff not a multiple of 64, bfloat16, and edge values. Each says what it witnesses.
Names never contain another component's name, so `pytest -k <component>` selects only its own.

TOLERANCES holds every hidden case's tolerance, tolerance(measured floor, dtype); the floor is
the larger max scaled error against the stored expected output of our adapter (tests/adapters.py)
and of the PyTorch built-in oracle (tests/oracles.py), both run in the case's dtype.
"""

from collections.abc import Callable

import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import FIXTURES_DIR
from cs336_basics.staff.fixture_cases import (
    BF16,
    PUBLIC_CASES,
    Case,
    embedding_case,
    ffn_block_case,
    layernorm_case,
    linear_case,
    pointwise_case,
    positionwise_case,
    rmsnorm_case,
    softmax_case,
    swiglu_case,
)
from cs336_basics.testing import tolerance

HIDDEN_FIXTURES_DIR = FIXTURES_DIR.parent / "hidden_fixtures"  # never shipped to students


def edited(make: Callable[[torch.Generator], dict], edit: Callable[[dict], None]) -> Callable[[torch.Generator], dict]:
    """A builder that draws as `make` does, then writes witness values in place with `edit`."""

    def make_edited(g: torch.Generator) -> dict:
        kwargs = make(g)
        edit(kwargs)
        return kwargs

    return make_edited


def _repeat_ids(kw: dict) -> None:  # ids 0 and vocab-1 already first; repeat them and one more id
    kw["token_ids"][2:6] = torch.tensor([5, 5, 0, kw["vocab_size"] - 1])


def _zero_row_and_spike(kw: dict) -> None:
    kw["in_features"][0] = 0.0  # RMS 0: output 0 (eps > 0), not NaN
    kw["in_features"][1, 3] = 1e6  # one entry dominates: it maps to ~sqrt(d_model) * g, the rest to ~0


def _constant_row(kw: dict) -> None:
    # variance 0: the output is the bias. 2.75 is dyadic, so every float32 partial sum of the row
    # is exact and the mean is exactly 2.75 in any summation order (with 3.7 a 1-ulp error in the
    # mean, times 1/sqrt(eps), shows as a 1.2e-4 scaled error: a rounding, not a mistake).
    kw["in_features"][0] = 2.75


def _fully_masked_row(kw: dict) -> None:
    kw["in_features"][2] = float("-inf")


def _uniform_and_one_hot_rows(kw: dict) -> None:
    kw["in_features"][0] = 7.0  # equal logits: uniform 1/n
    kw["in_features"][1, 4] = 1e4  # one huge logit: one-hot, no overflow


BIG = 1e4
PAIRS = (0.0, -0.0, 40.0, -40.0, 88.0, -88.0, BIG, -BIG)  # exact zeros and large magnitudes
MODERATE_PAIRS = PAIRS[:6]

HIDDEN_CASES = [
    # linear: odd sizes, a 1-D input, bfloat16 with 4-D input
    Case("linear_odd", "linear", "run_linear", 1001, linear_case((5,), 7, 13), hidden=True),
    Case("linear_1d", "linear", "run_linear", 1002, linear_case((), 33, 17), hidden=True),
    Case("linear_4d_bf16", "linear", "run_linear", 1003, linear_case((2, 3, 4), 24, 10, x_std=2.0), dtype=BF16, hidden=True),
    # embedding: repeated ids and both ends of an odd vocabulary; 1-D and 3-D ids; bfloat16 table
    Case("embedding_repeated_ids", "embedding", "run_embedding", 1011,
         edited(embedding_case((9,), 37, 13), _repeat_ids), hidden=True),
    Case("embedding_3d_ids", "embedding", "run_embedding", 1012, embedding_case((2, 3, 5), 11, 7), hidden=True),
    Case("embedding_bf16", "embedding", "run_embedding", 1013, embedding_case((4, 6), 50, 16), dtype=BF16, hidden=True),
    # silu: exactly 0 and large magnitudes (x or 0, never NaN); odd 1-D; bfloat16 4-D
    Case("silu_zero_and_large", "silu", "run_silu", 1021, pointwise_case((3, 5, 7), std=4.0, extremes=PAIRS), hidden=True),
    Case("silu_1d_odd", "silu", "run_silu", 1022, pointwise_case((13,), std=2.0), hidden=True),
    Case("silu_4d_bf16", "silu", "run_silu", 1023,
         pointwise_case((2, 3, 4, 5), std=3.0, extremes=(0.0, 300.0, -300.0)), dtype=BF16, hidden=True),
    # gelu: exactly 0 and large magnitudes (exact form); tanh form on odd 1-D; bfloat16
    # (values of 1e4 would set the error scale rms(e) so high that the two GELU forms, which
    # differ by up to 5e-4, could not be told apart: they get a case of their own)
    Case("gelu_zero_and_large", "gelu", "run_gelu", 1031,
         pointwise_case((2, 3, 4, 5), std=3.0, extremes=MODERATE_PAIRS, approximate="none"), hidden=True),
    Case("gelu_tanh_1d_odd", "gelu", "run_gelu", 1032,
         pointwise_case((17,), std=3.0, extremes=(0.0, 88.0, -88.0), approximate="tanh"), hidden=True),
    Case("gelu_huge_values", "gelu", "run_gelu", 1034,
         pointwise_case((6,), std=1.0, extremes=(BIG, -BIG, 1e3, -1e3, 0.0, -0.0), approximate="none"), hidden=True),
    Case("gelu_bf16", "gelu", "run_gelu", 1033, pointwise_case((4, 9), std=3.0, approximate="none"), dtype=BF16, hidden=True),
    # softmax: along a middle dim of a 4-D input; 1-D; a uniform row and a one-hot row; bfloat16
    Case("softmax_middle_dim", "softmax", "run_softmax", 1041, softmax_case((2, 5, 3, 4), dim=1, std=2.0), hidden=True),
    Case("softmax_1d", "softmax", "run_softmax", 1042, softmax_case((13,), dim=0, std=3.0), hidden=True),
    Case("softmax_uniform_and_one_hot", "softmax", "run_softmax", 1043,
         edited(softmax_case((4, 11), dim=-1, std=2.0), _uniform_and_one_hot_rows), hidden=True),
    Case("softmax_bf16", "softmax", "run_softmax", 1044, softmax_case((6, 11), dim=-1, std=4.0), dtype=BF16, hidden=True),
    # a fully masked row returns zeros (our documented definition; torch.softmax gives NaN)
    Case("softmax_fully_masked_row", "softmax", "run_softmax", 1045,
         edited(softmax_case((4, 9), dim=-1, std=2.0, mask_fraction=0.3), _fully_masked_row), hidden=True),
    # rmsnorm: a zero row and a row with one huge entry; 1-D with another eps; bfloat16 4-D
    Case("rmsnorm_zero_row_and_spike", "rmsnorm", "run_rmsnorm", 1051,
         edited(rmsnorm_case((4,), 33, eps=1e-5), _zero_row_and_spike), hidden=True),
    Case("rmsnorm_1d", "rmsnorm", "run_rmsnorm", 1052, rmsnorm_case((), 7, eps=1e-6), hidden=True),
    Case("rmsnorm_4d_bf16", "rmsnorm", "run_rmsnorm", 1053, rmsnorm_case((2, 3, 4), 20, eps=1e-5, x_std=3.0),
         dtype=BF16, hidden=True),
    # layernorm: a constant row (-> bias); 4-D with a large eps; 1-D bfloat16 with an offset
    Case("layernorm_constant_row", "layernorm", "run_layernorm", 1061,
         edited(layernorm_case((5,), 33, eps=1e-5, x_mean=2.0), _constant_row), hidden=True),
    Case("layernorm_4d_eps", "layernorm", "run_layernorm", 1062, layernorm_case((2, 3, 4), 9, eps=1e-2), hidden=True),
    Case("layernorm_1d_bf16", "layernorm", "run_layernorm", 1063, layernorm_case((), 40, eps=1e-5, x_std=2.0, x_mean=4.0),
         dtype=BF16, hidden=True),
    # swiglu: d_ff not a multiple of 64 with odd d_model; 1-D; bfloat16
    Case("swiglu_odd", "swiglu", "run_swiglu", 1071, swiglu_case((5,), 33, 100), hidden=True),
    Case("swiglu_1d", "swiglu", "run_swiglu", 1072, swiglu_case((), 16, 45, x_std=2.0), hidden=True),
    Case("swiglu_odd_bf16", "swiglu", "run_swiglu", 1073, swiglu_case((3, 4), 24, 100), dtype=BF16, hidden=True),
    # positionwise_ffn: odd sizes; ReLU on 4-D input; tanh-GELU in bfloat16
    Case("positionwise_ffn_odd", "positionwise_ffn", "run_positionwise_feedforward", 1081,
         positionwise_case((5,), 33, 100), hidden=True),
    Case("positionwise_ffn_relu_4d", "positionwise_ffn", "run_positionwise_feedforward", 1082,
         positionwise_case((2, 3, 4), 12, 20, activation="relu"), hidden=True),
    Case("positionwise_ffn_tanh_bf16", "positionwise_ffn", "run_positionwise_feedforward", 1083,
         positionwise_case((4, 6), 16, 40, activation="gelu_tanh"), dtype=BF16, hidden=True),
    # ffn_block: both configs with odd d_ff; LayerNorm without bias + ReLU on a 1-D input; bfloat16
    Case("ffn_block_ln_pw_odd", "ffn_block", "run_ffn_block", 1091,
         ffn_block_case((5,), 33, 100, "layernorm", "positionwise", "gelu", bias=True), hidden=True),
    Case("ffn_block_rms_glu_4d_odd", "ffn_block", "run_ffn_block", 1092,
         ffn_block_case((2, 3, 4), 20, 100, "rmsnorm", "swiglu", "silu"), hidden=True),
    Case("ffn_block_ln_pw_nobias_1d", "ffn_block", "run_ffn_block", 1093,
         ffn_block_case((), 16, 36, "layernorm", "positionwise", "relu"), hidden=True),
    Case("ffn_block_rms_glu_bf16", "ffn_block", "run_ffn_block", 1094,
         ffn_block_case((4, 6), 24, 100, "rmsnorm", "swiglu", "silu"), dtype=BF16, hidden=True),
]

# tolerance(measured floor, dtype). Floors: `uv run python -m hidden_tests.measure_floors`, rounded up.
TOLERANCES: dict[str, float] = {
    "linear_odd": tolerance(6.6e-8),
    "linear_1d": tolerance(8.2e-8),
    "linear_4d_bf16": tolerance(2.1e-3, BF16),
    "embedding_repeated_ids": 0.0,  # a row copy is exact: measured 0
    "embedding_3d_ids": 0.0,
    "embedding_bf16": 0.0,
    "silu_zero_and_large": tolerance(9.7e-10),
    "silu_1d_odd": tolerance(5.0e-8),
    "silu_4d_bf16": tolerance(4.6e-4, BF16),
    "gelu_zero_and_large": tolerance(5.2e-8),
    "gelu_tanh_1d_odd": tolerance(2.0e-9),
    "gelu_huge_values": tolerance(0.0),  # ours and the built-in both exact
    "gelu_bf16": tolerance(1.5e-3, BF16),
    "softmax_middle_dim": tolerance(9.5e-8),
    "softmax_1d": tolerance(7.3e-8),
    "softmax_uniform_and_one_hot": tolerance(1.2e-7),
    "softmax_bf16": tolerance(2.1e-3, BF16),
    "softmax_fully_masked_row": tolerance(7.0e-8),  # ours; torch.softmax gives NaN on that row by its definition
    "rmsnorm_zero_row_and_spike": tolerance(7.7e-8),
    "rmsnorm_1d": tolerance(4.2e-8),
    "rmsnorm_4d_bf16": tolerance(2.8e-3, BF16),
    "layernorm_constant_row": tolerance(1.4e-7),
    "layernorm_4d_eps": tolerance(1.4e-7),
    "layernorm_1d_bf16": tolerance(1.4e-3, BF16),
    "swiglu_odd": tolerance(3.3e-7),
    "swiglu_1d": tolerance(1.7e-7),
    "swiglu_odd_bf16": tolerance(7.5e-3, BF16),
    "positionwise_ffn_odd": tolerance(2.9e-7),
    "positionwise_ffn_relu_4d": tolerance(1.6e-7),
    "positionwise_ffn_tanh_bf16": tolerance(9.4e-3, BF16),
    "ffn_block_ln_pw_odd": tolerance(3.2e-7),
    "ffn_block_rms_glu_4d_odd": tolerance(1.7e-7),
    "ffn_block_ln_pw_nobias_1d": tolerance(6.4e-8),
    "ffn_block_rms_glu_bf16": tolerance(3.0e-3, BF16),
}


def hidden_tolerances(component: str | None = None) -> dict[str, float]:
    """{case name: tolerance} for the hidden cases, of one component or of all."""
    return {c.name: TOLERANCES[c.name] for c in HIDDEN_CASES if component in (None, c.component)}


def cases_by_component() -> dict[str, dict[str, list[Case]]]:
    """{component: {"public": [...], "hidden": [...]}} over every fixture case."""
    out = {comp: {"public": [], "hidden": []} for comp in COMPONENTS}
    for case in PUBLIC_CASES + HIDDEN_CASES:
        out[case.component]["hidden" if case.hidden else "public"].append(case)
    return out
