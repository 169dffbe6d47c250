"""What the grade checks of each behaviour a public test asserts: {component: {public test: the
graded cases that check the same behaviour}} (public cases are graded on fresh draws, hidden
ones on their stored inputs). Each area module of staff/cases/ declares its components' GRADED
and UNGRADED beside their cases; this module collects them and adds the public test files that
serve several components (SHARED_*). tests/staff/test_graded_behaviours.py fails when a public
test of a component (every component of POINTS) is in neither GRADED nor UNGRADED, or names
a case that does not exist. A component's public tests are those of tests/test_<component>.py and
tests/test_<component>_*.py (its ladder; parallel's adapters, heads and layers).

Every case loads its weights by the names the adapters use, strictly, so a module whose
parameters have other names or shapes fails every graded case of its component."""

from cs336_basics.staff.cases import AREAS, CASES

GRADED: dict[str, dict[str, tuple[str, ...]]] = {c: tests for area in AREAS for c, tests in area.GRADED.items()}
# Public tests that check given code or the test machinery, not the student's: {test: why}.
UNGRADED: dict[str, str] = {test: why for area in AREAS for test, why in area.UNGRADED.items()}

# The public test files of several components: what each of their tests checks, per component,
# and why the rest is not graded. Files of the tools, not of a component, are named apart.
SHARED_FILES = (
    "test_dtypes.py",
    "test_gradients.py",
    "test_module_dtypes.py",
    "test_activation_registry.py",
    "test_bad_input.py",
    "test_ffn_width.py",
    "test_smollm2.py",
    "test_train.py",
    "test_gpu.py",
)
TOOLING_FILES = {
    "test_compare.py": "the comparison every test reports with",
    "test_status.py": "cs336 status",
    "test_submit.py": "cs336 submit",
    "test_source_rule.py": "the one rule, which the grader applies to every case",
}
# test_dtypes.py's tests of each kernel it runs (its KERNELS, one per row of tests/floors.py's
# per-dtype table), graded by the forward cases of the kernel's component in these dtypes
DTYPE_TESTS = {
    "test_output_dtype_is_input_dtype": ("bfloat16", "float16", "float64"),
    "test_matches_torch_builtin_in_same_dtype": ("bfloat16", "float16", "float64"),
    "test_half_precision_is_within_a_few_ulps_of_the_truth": ("bfloat16", "float16"),
}


def forward_cases_in(components: set[str], dtypes: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Per component, its forward cases in these dtypes ("bfloat16", "float16", "float64")."""

    def chosen(case) -> bool:
        return str(case.dtype).removeprefix("torch.") in dtypes and not case.adapter.endswith("_backward")

    return {c: tuple(k.name for k in CASES if k.component == c and chosen(k)) for c in sorted(components)}


# test_module_dtypes.py's test of each module it builds, graded by the component's initialisation
# checks (run_<component>_init_checks: the parameters' dtype among them), where it has any
MODULE_TEST = "test_module_parameters_take_the_given_dtype_and_device"


def init_cases_of(components: set[str]) -> dict[str, tuple[str, ...]]:
    """Per component that has initialisation-check cases, their names."""
    found = {
        c: tuple(k.name for k in CASES if k.component == c and k.adapter.endswith("_init_checks")) for c in components
    }
    return {c: names for c, names in sorted(found.items()) if names}


SILU_GRADIENT = ("silu_backward_extremes", "silu_backward_4d_f64")
GELU_GRADIENT = ("gelu_backward_extremes", "gelu_backward_tanh", "gelu_backward_4d_f64")
SHARED_GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "test_silu_is_finite_at_extremes": {"silu": ("silu_extremes", "silu_extremes_fp16", "silu_zero_and_large")},
    "test_silu_is_identity_for_large_positive_inputs": {"silu": ("silu_extremes", "silu_zero_and_large")},
    "test_silu_is_zero_for_large_negative_inputs": {"silu": ("silu_extremes", "silu_zero_and_large")},
    "test_gelu_is_finite_at_extremes": {"gelu": ("gelu_zero_and_large", "gelu_huge_values")},
    "test_softmax_is_finite_for_logits_of_1e4": {"softmax": ("softmax_large_logits", "softmax_uniform_and_one_hot")},
    "test_softmax_of_row_with_one_unmasked_entry_is_one_hot": {
        "softmax": ("softmax_masked", "softmax_uniform_and_one_hot")
    },
    "test_softmax_of_fully_masked_row_is_zeros": {"softmax": ("softmax_fully_masked_row",)},
    "test_layernorm_of_one_feature_is_its_bias": {"layernorm": ("layernorm_one_feature",)},
    "test_backward_matches_torch_builtin": {
        "silu": SILU_GRADIENT,
        "gelu": GELU_GRADIENT,
        "softmax": ("softmax_backward_masked",),
    },
    "test_softmax_gradient_with_masked_entries_matches_builtin": {"softmax": ("softmax_backward_masked",)},
    "test_softmax_gradient_of_fully_masked_row_is_zero": {
        "softmax": ("softmax_backward_masked", "softmax_backward_dim0_fully_masked")
    },
    "test_silu_gradient_is_finite_at_extremes": {"silu": SILU_GRADIENT},
    "test_gelu_gradient_is_finite_at_extremes": {"gelu": GELU_GRADIENT},
}
SHARED_UNGRADED: dict[str, str] = {
    "test_backward_matches_torch_builtin": "linear, embedding, the FFNs and the norms: autograd's gradient of the "
    "graded forward (no hand-written backward is asked for); relu is given code",
    "test_module_parameters_take_the_given_dtype_and_device": "the device (every case runs on the CPU), and the "
    "composite modules, whose parameters are their layers' (a composite that does not pass the dtype on is not graded)",
    "test_relu_gradient_at_zero_is_zero_like_builtin": "relu is given code",
    "test_activation_registry_names_the_four_activations": "the given activation registry",
    "test_activation_registry_returns_the_named_kernel": "the given activation registry",
    "test_activation_registry_unknown_name_lists_valid_names": "the given activation registry",
    "test_relu_keeps_nan_and_zeroes_negatives_like_torch_relu": "relu is given code",
    "test_bad_input_raises_clear_error": "the given argument checks",
    "test_adapter_with_a_missing_weight_fails_loudly": "the given strict load (nn.convert)",
    "test_adapter_with_an_extra_weight_fails_loudly": "the given strict load (nn.convert)",
    "test_kernels_check_their_arguments_again_after_a_model_forward": "the given argument checks",
    "test_kernels_check_their_arguments_again_after_a_model_forward_raised_inside_a_layer": "the given argument checks",
    "test_ffn_width_pins_published_sizes": "the given width rule (nn.ffn_width)",
    "test_ffn_width_rounds_up_not_by_modulo": "the given width rule (nn.ffn_width)",
    "test_ffn_width_keeps_exact_multiples": "the given width rule (nn.ffn_width)",
    "test_ffn_width_rejects_non_positive_arguments": "the given width rule (nn.ffn_width)",
    "test_smollm2_answers_the_capital_of_france_is_paris": "real weights, which the grader does not have: the model "
    "and generation are graded on random ones (lm, generate)",
    "test_train_short_run_loss_falls_below_the_measured_threshold": "a training run of minutes: the components it "
    "runs are graded one by one",
    "test_train_ablation_lowers_the_training_loss": "a training run of minutes: the components it runs are graded "
    "one by one",
    # the GPU tier: the grader has no GPU (every case runs on the CPU)
    "test_gpu_fixture": "the device: the same fixtures are graded cases on the CPU",
    "test_gpu_train_steps_lower_the_loss": "the device: the training run is the leaderboard's, not a graded case",
    "test_gpu_evaluate_on_the_device_agrees_with_the_cpu": "the device: the leaderboard evaluates on the CPU",
    "test_gpu_greedy_generation_on_smollm2_equals_the_cpu_tokens": "the device: generation is graded on the CPU "
    "(generate_* cases)",
}
