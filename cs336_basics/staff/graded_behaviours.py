"""What the grade checks of each behaviour a public test asserts: {component: {public test: the
graded cases that check the same behaviour}} (public cases are graded on fresh draws, hidden
ones on their stored inputs; cases.py). tests/staff/test_graded_behaviours.py fails when a public
test of a listed component is in neither GRADED nor UNGRADED, or names a case that does not exist.
Ladder rungs (tests/test_<component>_ladder.py) are public tests too."""

GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "cross_entropy": {
        "test_cross_entropy_matches_fixture": ("cross_entropy", "cross_entropy_2d_offset_logits", "cross_entropy_bf16"),
        "test_cross_entropy_kernel_matches_torch_builtin": ("cross_entropy_4d_f64", "cross_entropy_2d_offset_logits"),
        "test_cross_entropy_of_equal_logits_is_log_vocab_size": ("cross_entropy_one_class", "cross_entropy"),
        "test_cross_entropy_of_logits_of_1e4_is_finite_and_exact": ("cross_entropy_huge_logits",),
        "test_cross_entropy_half_inputs_give_the_loss_rounded_once_to_their_dtype": ("cross_entropy_bf16",),
        "test_cross_entropy_returns_a_scalar": ("cross_entropy",),
        "test_cross_entropy_of_one_row_is_its_log_sum_exp_minus_the_target_logit": ("cross_entropy_one_position",),
        "test_cross_entropy_averages_the_rows": ("cross_entropy", "cross_entropy_4d_odd"),
        "test_cross_entropy_ignores_a_constant_added_to_a_row": ("cross_entropy_2d_offset_logits",),
        "test_cross_entropy_of_logits_of_1e4_is_finite": ("cross_entropy_huge_logits",),
    },
    "adamw": {
        "test_adamw_matches_fixture": ("adamw", "adamw_small_gradients", "adamw_strong_decay"),
        "test_adamw_moments_and_bias_correction_match_torch_builtin": ("adamw_f64_zero_eps", "adamw_odd_many_steps"),
        "test_adamw_decays_weights_by_lr_times_weight_decay_when_gradients_are_zero": ("adamw_strong_decay",),
        "test_adamw_keeps_step_and_moments_per_parameter": ("adamw_three_params",),
        "test_adamw_state_dict_round_trip_resumes_exactly": ("adamw_state_dict_resume",),
        "test_adamw_param_groups_use_their_own_hyperparameters": ("adamw_param_groups",),
        "test_adamw_first_step_moves_each_parameter_by_lr_times_the_sign_of_its_gradient": ("adamw_f64_zero_eps",),
        "test_adamw_adds_eps_to_the_root_of_v_not_under_it": ("adamw_small_gradients",),
        "test_adamw_decays_the_parameter_not_the_gradient": ("adamw_strong_decay",),
        "test_adamw_each_param_group_uses_its_own_learning_rate": ("adamw_param_groups",),
        "test_adamw_state_dict_round_trip_continues_exactly": ("adamw_state_dict_resume",),
    },
    "gradient_clipping": {
        "test_gradient_clipping_matches_fixture": ("gradient_clipping", "gradient_clipping_below_max"),
        "test_gradient_clipping_matches_torch_builtin": ("gradient_clipping_f64", "gradient_clipping_3d_far_above"),
        "test_gradient_clipping_scales_the_global_norm_to_max_l2_norm": ("gradient_clipping_f64",),
        "test_gradient_clipping_keeps_directions": ("gradient_clipping", "gradient_clipping_f64"),
        "test_gradient_clipping_leaves_gradients_below_the_max_unchanged": ("gradient_clipping_below_max",),
        "test_gradient_clipping_skips_parameters_without_gradient": ("gradient_clipping_one_pass_no_grad",),
        "test_gradient_clipping_reads_an_iterator_of_parameters_once": ("gradient_clipping_one_pass_no_grad",),
        "test_gradient_clipping_returns_the_norm_before_clipping": ("gradient_clipping_returned_norm",),
        "test_gradient_clipping_returns_the_l2_norm_of_all_gradients_together": ("gradient_clipping_returned_norm",),
        "test_gradient_clipping_changes_the_gradients_when_their_norm_is_above_the_max": ("gradient_clipping",),
        "test_gradient_clipping_scales_every_gradient_by_one_factor": ("gradient_clipping",),
        "test_gradient_clipping_factor_is_max_over_the_norm_plus_eps": ("gradient_clipping_f64",),
        "test_gradient_clipping_of_float16_gradients_whose_squares_overflow_float16": (
            "gradient_clipping_f16_squares_overflow",
        ),
    },
    "lr_schedule": {
        "test_lr_schedule_matches_fixture": ("lr_schedule", "lr_schedule_no_warmup"),
        "test_lr_schedule_starts_at_zero": ("lr_schedule",),
        "test_lr_schedule_warms_up_in_equal_steps_to_max": ("lr_schedule", "lr_schedule_long"),
        "test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_annealing": ("lr_schedule",),
        "test_lr_schedule_follows_the_cosine_a_quarter_into_annealing": ("lr_schedule", "lr_schedule_long"),
        "test_lr_schedule_is_min_from_the_end_of_the_cycle_on": ("lr_schedule",),
        "test_lr_schedule_rises_during_warm_up_and_falls_after": ("lr_schedule",),
        "test_lr_schedule_without_warm_up_starts_at_max": ("lr_schedule_no_warmup",),
        "test_lr_schedule_with_warm_up_as_long_as_the_cycle_drops_to_min_at_its_end": (
            "lr_schedule_warmup_is_whole_cycle",
        ),
        "test_lr_schedule_is_zero_at_iteration_zero": ("lr_schedule",),
        "test_lr_schedule_warms_up_at_an_even_rate_to_the_max": ("lr_schedule",),
        "test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_the_cycle": ("lr_schedule",),
        "test_lr_schedule_stays_at_min_after_the_cycle": ("lr_schedule", "lr_schedule_zero_floor"),
    },
    "get_batch": {
        "test_get_batch_matches_fixture": ("get_batch",),
        "test_get_batch_shapes_dtype_and_device": ("get_batch",),
        "test_get_batch_inputs_are_windows_and_targets_are_the_next_tokens": ("get_batch",),
        "test_get_batch_every_start_is_drawn_uniformly": ("get_batch",),
        "test_get_batch_seeded_generator_is_reproducible": ("get_batch_generator",),
        "test_get_batch_global_seed_is_reproducible": ("get_batch",),
        "test_get_batch_one_valid_start": ("get_batch_one_start",),
        "test_get_batch_reads_a_uint16_memmap": ("get_batch",),
        "test_get_batch_reads_only_the_sampled_tokens_of_a_memmap": ("get_batch",),
        "test_get_batch_returns_inputs_and_targets_of_shape_batch_by_context": ("get_batch",),
        "test_get_batch_returns_int64_tokens": ("get_batch", "get_batch_uint32_long_windows"),
        "test_get_batch_puts_the_batch_on_the_requested_device": ("get_batch",),
        "test_get_batch_targets_are_the_inputs_moved_on_by_one_token": ("get_batch",),
        "test_get_batch_rows_are_consecutive_windows_of_the_tokens": ("get_batch",),
        "test_get_batch_draws_each_row_s_start_independently": ("get_batch", "get_batch_generator"),
        "test_get_batch_generator_decides_the_draw": ("get_batch_generator",),
        "test_get_batch_draws_the_first_and_the_last_window": ("get_batch",),
    },
}

# Public tests that check given code or the test machinery, not the student's: {test: why}.
UNGRADED: dict[str, str] = {
    "test_cross_entropy_gradient_matches_torch_builtin": "autograd's gradient of the graded forward",
    "test_cross_entropy_gradient_of_huge_logits_is_finite": "autograd's gradient of the graded forward",
    "test_adamw_leaves_a_parameter_without_gradient_untouched": "the given loop skips p.grad None",
    "test_adamw_step_returns_the_closure_s_loss": "the given step() calls the closure",
    "test_get_batch_check_bounds_are_exact_binomial_tails": "the test's own statistics",
    "test_get_batch_memmap_residency_is_measurable_here": "the test machine",
    "test_get_batch_unavailable_device_raises_clear_error": "the given argument check",
}
