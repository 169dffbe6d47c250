"""Training, cross-entropy, AdamW, the learning-rate schedule, gradient clipping, batches and
checkpoints: the builders of their inputs, then their cases."""

from functools import partial

import numpy as np
import torch
from torch import Tensor

from cs336_basics.staff.cases.case import BF16, BIG, EXACT_INT64, F16, F32, F64, B, Case
from cs336_basics.staff.cases.draw import Make, Rng, edited, randint, randn


def cross_entropy_case(
    batch: tuple[int, ...], vocab_size: int, std: float, mean: float = 0.0, target_margin: float = 0.0
) -> Make:
    """Logits (..., vocab_size) ~ N(mean, std^2) and uniform targets; the first two targets are
    the two ends of the vocabulary. target_margin is added to each target's logit (a confident
    model: a small loss, log(1 + small), which half-precision arithmetic along the way loses)."""

    def make(rng):
        targets = randint(rng, 0, vocab_size, batch)
        ends = torch.tensor([0, vocab_size - 1])[: targets.numel()]
        targets.view(-1)[: len(ends)] = ends
        inputs = randn(rng, *batch, vocab_size, std=std, mean=mean)
        inputs.scatter_add_(-1, targets.unsqueeze(-1), torch.full((*batch, 1), target_margin))
        return dict(inputs=inputs, targets=targets)

    return make


def away_from_zero(rng: Rng, *shape: int, scale: float) -> Tensor:
    """Values of size scale * [0.5, 3.5) or so, with random signs: |x| = scale * (0.5 + |N(0, 1)|)."""
    z = rng.standard_normal(shape)
    return torch.from_numpy((np.sign(z) * (0.5 + np.abs(z)) * scale).astype(np.float32))


def adamw_case(
    shapes: dict[str, tuple[int, ...]],
    steps: int,
    lr: float,
    weight_decay: float,
    eps: float = 1e-8,
    betas: tuple[float, float] = (0.9, 0.999),
    grad_scale: float = 1.0,
    param_std: float = 1.0,
    group_lrs: tuple[float, ...] | None = None,
    resume_after: int = 0,
) -> Make:
    """Parameters ~ N(0, param_std^2) and `steps` gradients per parameter of size grad_scale *
    [0.5, 3.5) (away from 0: a tiny |g| on the first step makes where eps sits matter, which the
    hyper-parameters of a case decide instead). group_lrs: one param group per parameter (sorted
    names) with that lr; resume_after: the optimizer's state_dict moves to a new one after that
    many steps (adapters.run_adamw_steps)."""

    def make(rng):
        params = {name: randn(rng, *shape, std=param_std) for name, shape in shapes.items()}
        grads = {name: away_from_zero(rng, steps, *shape, scale=grad_scale) for name, shape in shapes.items()}
        extra = {} if group_lrs is None else {"group_lrs": torch.tensor(group_lrs, dtype=torch.float64)}
        extra |= {"resume_after": resume_after} if resume_after else {}
        return (
            dict(params=params, grads=grads, lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay)
            | extra
        )

    return make


def lr_schedule_case(
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
    random_iters: int = 16,
) -> Make:
    """The schedule at its boundaries (0, 1, warmup_iters - 1, warmup_iters, warmup_iters + 1,
    the middle of the annealing, cosine_cycle_iters - 1, cosine_cycle_iters, cosine_cycle_iters + 1,
    far beyond) and at `random_iters` iterations drawn up to 1.5 cosine_cycle_iters."""
    w, c = warmup_iters, cosine_cycle_iters
    fixed = [0, 1, w - 1, w, w + 1, (w + c) // 2, c - 1, c, c + 1, 10 * c + 7]

    def make(rng):
        drawn = rng.integers(0, (3 * c) // 2 + 2, size=random_iters).tolist()
        iterations = torch.tensor([i for i in fixed if i >= 0] + drawn, dtype=torch.int64)
        return dict(
            iterations=iterations,
            max_learning_rate=max_learning_rate,
            min_learning_rate=min_learning_rate,
            warmup_iters=warmup_iters,
            cosine_cycle_iters=cosine_cycle_iters,
        )

    return make


def gradient_clipping_case(
    shapes: dict[str, tuple[int, ...]],
    max_l2_norm: float,
    norm_ratio: float,
    params_without_grad: int = 0,
    one_pass: bool = False,
    with_norm: bool = False,
) -> Make:
    """Gradients whose global L2 norm is norm_ratio * max_l2_norm exactly (> 1: clipped; < 1: left
    alone), one parameter's gradient much larger than the others' (so that per-parameter norms
    and the global norm clip differently); with_norm: the norm it returns is graded too."""

    def make(rng):
        grads = {name: randn(rng, *shape) for name, shape in shapes.items()}
        first = sorted(grads)[0]
        grads[first] = grads[first] * 8.0  # one dominant gradient
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values()))
        scale = norm_ratio * max_l2_norm / float(norm)
        grads = {name: (g.double() * scale).float() for name, g in grads.items()}
        extra = {"with_norm": True} if with_norm else {}
        return (
            dict(grads=grads, max_l2_norm=max_l2_norm, params_without_grad=params_without_grad, one_pass=one_pass)
            | extra
        )

    return make


def get_batch_generator_case(num_tokens: int, batch_size: int, context_length: int, num_batches: int) -> Make:
    """Distinct token ids and a generator seed (adapters.run_get_batch_generator_checks)."""

    def make(rng):
        ids = rng.choice(65536, size=num_tokens, replace=False).astype(np.int64)
        return dict(
            dataset=torch.from_numpy(ids),
            batch_size=batch_size,
            context_length=context_length,
            num_batches=num_batches,
            seed=int(rng.integers(2**31)),
        )

    return make


def get_batch_case(
    num_tokens: int,
    batch_size: int,
    context_length: int,
    num_batches: int,
    vocab_size: int = 65536,
    token_dtype: str = "uint16",
) -> Make:
    """A token stream of distinct ids (a row's first token names its start; not arange, so
    targets = inputs + 1 is wrong) and a seed for the global generators (adapters.run_get_batch_checks)."""

    def make(rng):
        ids = rng.choice(vocab_size, size=num_tokens, replace=False).astype(np.int64)
        return dict(
            dataset=torch.from_numpy(ids),
            batch_size=batch_size,
            context_length=context_length,
            num_batches=num_batches,
            seed=int(rng.integers(2**31)),
            token_dtype=token_dtype,
        )

    return make


def checkpoint_case(
    shapes: dict[str, tuple[int, ...]],
    steps: int,
    steps_before: int,
    lr: float = 1e-2,
    weight_decay: float = 0.1,
    to: str = "path",
) -> Make:
    """Weights and one gradient per optimizer step for each (adapters.run_checkpoint_resume)."""

    def make(rng):
        weights = {name: randn(rng, *shape) for name, shape in shapes.items()}
        gradients = {name: randn(rng, steps, *shape) for name, shape in shapes.items()}
        return dict(
            weights=weights, gradients=gradients, steps_before=steps_before, lr=lr, weight_decay=weight_decay, to=to
        )

    return make


def _weights_and_a_buffer(rng) -> dict:
    """Two parameters and a buffer, three steps."""
    weights = {
        "w": torch.tensor(rng.standard_normal((4, 3)), dtype=F32),
        "b": torch.tensor(rng.standard_normal(3), dtype=F32),
    }
    return dict(weights=weights, scale=torch.tensor(rng.random(3) + 0.5, dtype=F32), steps=3)


cross_entropy = partial(Case, component="cross_entropy", adapter="run_cross_entropy")
adamw_steps = partial(Case, component="adamw", adapter="run_adamw_steps")
# the rate at an iteration: a float64 scalar, exact but for rounding
lr_schedule_at = partial(Case, component="lr_schedule", adapter="run_lr_schedule_at", floor=0.0, dtype=F64)
gradient_clipping_of = partial(Case, component="gradient_clipping", adapter="run_gradient_clipping_of")
get_batch_checks = partial(Case, component="get_batch", adapter="run_get_batch_checks", **EXACT_INT64)
get_batch_generator_checks = partial(
    Case, component="get_batch", adapter="run_get_batch_generator_checks", **EXACT_INT64
)
checkpoint_resume = partial(Case, component="checkpoint", adapter="run_checkpoint_resume")
checkpoint_checks = partial(Case, component="checkpoint", adapter="run_checkpoint_checks", **EXACT_INT64)


def _int32_targets(kw: dict) -> None:
    kw["targets"] = kw["targets"].to(torch.int32)


CASES = [
    # cross_entropy: CS336's (4 x 12 positions) over 100 classes; witnesses: logits around 1000
    # (exp overflows unless the max is subtracted); a spread of ~60 below a max under 0 (the target's
    # probability underflows, so log(softmax) gives inf while exp stays finite); logits of +-1e4
    cross_entropy("cross_entropy", seed=70, make=cross_entropy_case(B, 100, std=2.0), floor=6.2e-8),
    cross_entropy(
        "cross_entropy_2d_offset_logits",
        seed=71,
        make=cross_entropy_case((16,), 50, std=4.0, mean=1000.0),
        floor=6.9e-8,
    ),
    cross_entropy("cross_entropy_bf16", seed=72, make=cross_entropy_case(B, 100, std=3.0), floor=3.3e-3, dtype=BF16),
    cross_entropy(
        "cross_entropy_far_targets", seed=73, make=cross_entropy_case((6, 10), 64, std=60.0, mean=-150.0), floor=8.1e-8
    ),
    cross_entropy("cross_entropy_huge_logits", seed=74, make=cross_entropy_case((8,), 32, std=BIG), floor=5.4e-8),
    # witness (public; cross_entropy_bf16_confident is its hidden twin): two classes, the target's
    # logit 3 above the other, so every loss is log(1 + exp(-3)) = 0.0486; bfloat16 cannot hold
    # 1 + exp(-3) (it rounds to 1.046875), so the formula computed in bfloat16 is 6 % low
    cross_entropy(
        "cross_entropy_bf16_confident_rows",
        seed=166,
        make=cross_entropy_case((4, 6), 2, std=0.0, target_margin=3.0),
        floor=3.5e-5,
        dtype=BF16,
    ),
    cross_entropy(
        "cross_entropy_4d_f64", seed=133, make=cross_entropy_case((2, 3, 4), 30, std=3.0), floor=2.0e-16, dtype=F64
    ),
    # int32 targets, which the argument check accepts: gather needs them as int64
    cross_entropy(
        "cross_entropy_int32_targets",
        seed=213,
        make=edited(cross_entropy_case((5, 7), 40, std=2.0), _int32_targets),
        floor=8.0e-8,
    ),
    cross_entropy(
        "cross_entropy_int32_targets_3d",
        hidden=True,
        seed=1207,
        make=edited(cross_entropy_case((2, 3, 4), 23, std=3.0), _int32_targets),
        floor=2.8e-8,
    ),
    # hidden: one position (0-d targets); 4-D odd; float16 logits of +-1e3 (exp overflows float16
    # past 11); one class (loss 0)
    cross_entropy(
        "cross_entropy_one_position", hidden=True, seed=1161, make=cross_entropy_case((), 37, std=3.0), floor=1.6e-8
    ),
    cross_entropy(
        "cross_entropy_4d_odd", hidden=True, seed=1162, make=cross_entropy_case((2, 3, 5), 7, std=2.0), floor=4.2e-9
    ),
    cross_entropy(
        "cross_entropy_fp16_large",
        hidden=True,
        seed=1163,
        make=cross_entropy_case((4, 6), 50, std=1e3),
        floor=1.8e-4,
        dtype=F16,
    ),
    cross_entropy(
        "cross_entropy_one_class", hidden=True, seed=1164, make=cross_entropy_case((5,), 1, std=2.0), floor=0.0
    ),
    # a confident model in bfloat16: two classes, the target's logit 3 above the other, loss
    # log(1 + exp(-3)) at every position; bfloat16 cannot hold 1 + exp(-3), so any arithmetic run in
    # bfloat16 (as F.cross_entropy's is) is off by 5 %; the handout asks for float32
    cross_entropy(
        "cross_entropy_bf16_confident",
        hidden=True,
        seed=1165,
        make=cross_entropy_case((3, 5), 2, std=0.0, target_margin=3.0),
        floor=3.5e-5,
        dtype=BF16,
    ),
    # adamw: 10 steps of a weight and a bias; witnesses: gradients of ~1e-4 at a tiny lr, where eps
    # inside or outside the square root differs; strong weight decay
    adamw_steps(
        "adamw",
        seed=75,
        make=adamw_case({"weight": (8, 16), "bias": (16,)}, 10, lr=1e-3, weight_decay=0.01),
        floor=4.7e-7,
    ),
    adamw_steps(
        "adamw_small_gradients",
        seed=76,
        make=adamw_case({"weight": (6, 5)}, 10, lr=1e-5, weight_decay=0.01, grad_scale=1e-4, param_std=0.1),
        floor=4.4e-7,
    ),
    adamw_steps(
        "adamw_strong_decay",
        seed=77,
        make=adamw_case({"weight": (4, 9), "bias": (9,)}, 8, lr=5e-4, weight_decay=0.2, betas=(0.8, 0.99)),
        floor=2.5e-7,
    ),
    # eps = 0 and no weight decay: a hard-coded eps fails, and the accepted orders agree to float64
    # rounding (CS336's Algorithm 1 adds eps to sqrt(v) before the bias correction and decays after
    # the step; torch.optim.AdamW adds it after and decays before: they differ by ~1e-5 otherwise)
    adamw_steps(
        "adamw_f64_zero_eps",
        seed=129,
        make=adamw_case({"weight": (5, 7)}, 6, lr=1e-2, weight_decay=0.0, eps=0.0, grad_scale=1e-2),
        floor=1.3e-16,
        dtype=F64,
    ),
    # what the public suite asserts of param groups and of a state_dict resume
    adamw_steps(
        "adamw_two_groups",
        seed=151,
        make=adamw_case({"w": (3, 4), "b": (4,)}, 4, lr=2e-3, weight_decay=0.0, group_lrs=(1e-2, 5e-4)),
        floor=7.7e-8,
    ),
    adamw_steps(
        "adamw_resumed_from_state_dict",
        seed=152,
        make=adamw_case({"weight": (4, 3)}, 6, lr=5e-3, weight_decay=0.0, resume_after=2),
        floor=1.1e-7,
    ),
    # hidden: one odd-shaped parameter over 40 steps; three parameters, other betas. (No float64
    # case: its tolerance, 1e-15, is below what another CPU's vector sqrt moves the expected
    # output by; tests/staff/test_adamw_oracle.py compares with torch.optim.AdamW in float64.)
    adamw_steps(
        "adamw_odd_many_steps",
        hidden=True,
        seed=1171,
        make=adamw_case({"weight": (5, 7)}, 40, lr=1e-3, weight_decay=0.01),
        floor=8.9e-7,
    ),
    adamw_steps(
        "adamw_three_params",
        hidden=True,
        seed=1172,
        make=adamw_case(
            {"embed": (11, 4), "gain": (4,), "head": (3, 4)}, 6, lr=1e-3, weight_decay=0.05, betas=(0.85, 0.98)
        ),
        floor=2.0e-7,
    ),
    # what tests/test_adamw.py asserts beyond one group's steps: each param group's own lr, and a
    # state_dict that carries m, v and the step count into a new optimizer
    adamw_steps(
        "adamw_param_groups",
        hidden=True,
        seed=1173,
        make=adamw_case({"a": (4, 5), "b": (6,)}, 5, lr=1e-3, weight_decay=0.0, group_lrs=(3e-2, 1e-4)),
        floor=8.9e-8,
    ),
    adamw_steps(
        "adamw_state_dict_resume",
        hidden=True,
        seed=1174,
        make=adamw_case({"weight": (5, 4), "bias": (4,)}, 8, lr=1e-2, weight_decay=0.0, resume_after=3),
        floor=8.9e-8,
    ),
    # lr_schedule: CS336's schedule (1, 0.1, 7, 21); no warm-up
    lr_schedule_at("lr_schedule", seed=80, make=lr_schedule_case(1.0, 0.1, 7, 21)),
    lr_schedule_at("lr_schedule_no_warmup", seed=81, make=lr_schedule_case(3e-4, 3e-5, 0, 100)),
    # hidden: a long schedule (LLaMA-like); warm-up as long as the cycle; a floor of 0
    lr_schedule_at(
        "lr_schedule_long", hidden=True, seed=1181, make=lr_schedule_case(6e-4, 6e-5, 2000, 100000, random_iters=40)
    ),
    lr_schedule_at(
        "lr_schedule_warmup_is_whole_cycle",
        hidden=True,
        seed=1182,
        make=lr_schedule_case(1e-3, 1e-4, 10, 10, random_iters=5),
    ),
    lr_schedule_at("lr_schedule_zero_floor", hidden=True, seed=1183, make=lr_schedule_case(2.0, 0.0, 3, 50)),
    # gradient_clipping: CS336's max_l2_norm 1e-2 with the global norm 3x above it; below it (left
    # alone); parameters without a gradient and given as an iterator (model.parameters())
    gradient_clipping_of(
        "gradient_clipping",
        seed=84,
        make=gradient_clipping_case({"a": (5, 5), "b": (7,), "c": (3, 4)}, 1e-2, 3.0),
        floor=1.6e-7,
    ),
    gradient_clipping_of(
        "gradient_clipping_below_max",
        seed=85,
        make=gradient_clipping_case({"a": (4, 6), "b": (6,)}, 1.0, 0.5),
        floor=0.0,
    ),
    gradient_clipping_of(
        "gradient_clipping_one_pass_no_grad",
        seed=86,
        make=gradient_clipping_case(
            {"a": (3, 3), "b": (5,), "c": (2, 2)}, 0.5, 2.0, params_without_grad=2, one_pass=True
        ),
        floor=1.3e-7,
    ),
    gradient_clipping_of(
        "gradient_clipping_f64",
        seed=131,
        make=gradient_clipping_case({"a": (4, 3), "b": (5,)}, 2.0, 4.0),
        floor=2.6e-16,
        dtype=F64,
    ),
    gradient_clipping_of(
        "gradient_clipping_2d_bf16",
        seed=132,
        make=gradient_clipping_case({"a": (6,), "b": (2, 5)}, 0.1, 1.5),
        floor=4.7e-3,
        dtype=BF16,
    ),
    # the norm it returns, which the public suite asserts
    gradient_clipping_of(
        "gradient_clipping_returns_its_norm",
        seed=153,
        make=gradient_clipping_case({"a": (3, 4), "b": (6,)}, 0.5, 2.0, with_norm=True),
        floor=8.1e-8,
    ),
    # witness (public; gradient_clipping_f16_squares_overflow is its hidden twin): float16
    # gradients of up to ~2e3, whose squares (4e6) are past float16's 65504: a norm summed in
    # float16 is inf and the gradients are scaled to 0; summed in float32 the norm is ~2e3
    gradient_clipping_of(
        "gradient_clipping_f16_large_gradients",
        seed=167,
        make=gradient_clipping_case({"a": (4, 6), "b": (9,)}, 1.0, 2000.0),
        floor=5.8e-4,
        dtype=F16,
    ),
    # hidden: bfloat16; one 3-D gradient far above the max; exactly at the max (left alone)
    gradient_clipping_of(
        "gradient_clipping_bf16",
        hidden=True,
        seed=1191,
        make=gradient_clipping_case({"a": (4, 5), "b": (5,)}, 1.0, 4.0),
        floor=3.2e-4,
        dtype=BF16,
    ),
    gradient_clipping_of(
        "gradient_clipping_3d_far_above",
        hidden=True,
        seed=1192,
        make=gradient_clipping_case({"a": (2, 3, 4)}, 0.1, 1e3, params_without_grad=1),
        floor=5.1e-8,
    ),
    gradient_clipping_of(
        "gradient_clipping_many_small",
        hidden=True,
        seed=1193,
        make=gradient_clipping_case({f"p{i}": (3,) for i in range(9)}, 2.0, 0.9, one_pass=True),
        floor=0.0,
    ),
    # the norm gradient_clipping returns (tests/test_gradient_clipping.py asserts it); float16
    # gradients of ~1e3, whose squares overflow float16 unless the norm is summed in float32
    gradient_clipping_of(
        "gradient_clipping_returned_norm",
        hidden=True,
        seed=1194,
        make=gradient_clipping_case({"a": (5, 5), "b": (7,)}, 1.0, 3.0, with_norm=True),
        floor=1.1e-8,
    ),
    gradient_clipping_of(
        "gradient_clipping_f16_squares_overflow",
        hidden=True,
        seed=1195,
        make=gradient_clipping_case({"a": (5, 5), "b": (7,)}, 1.0, 2000.0, with_norm=True),
        floor=2.3e-5,
        dtype=F16,
    ),
    # get_batch: 400 batches of 40 windows of 7 tokens from a uint16 token file of 72 distinct ids
    # (np.memmap), seeded; the output is 1 for each check of adapter_checks.GET_BATCH_CHECKS that holds
    # (exact: a correct get_batch fails one with probability < 1e-6). witness: one window repeated
    # in every row lumps the counts of its 65 starts into multiples of 40, beyond their bounds
    get_batch_checks("get_batch", seed=42, make=get_batch_case(72, 40, 7, 400)),
    get_batch_checks(
        "get_batch_uint32_long_windows",
        seed=134,
        make=get_batch_case(60, 16, 11, 300, vocab_size=2**20, token_dtype="uint32"),
    ),
    # hidden: one valid start only (context_length = len - 1); int32 token file of large ids with a
    # long context; batches of one row
    get_batch_checks("get_batch_one_start", hidden=True, seed=1401, make=get_batch_case(13, 4, 12, 50)),
    get_batch_checks(
        "get_batch_int32_long_context",
        hidden=True,
        seed=1402,
        make=get_batch_case(300, 12, 64, 400, vocab_size=1 << 20, token_dtype="int32"),
    ),
    get_batch_checks("get_batch_rows_of_one", hidden=True, seed=1403, make=get_batch_case(20, 1, 3, 600)),
    # what tests/test_get_batch.py asserts of the `generator` argument, and rows drawn independently
    get_batch_generator_checks(
        "get_batch_generator", hidden=True, seed=1404, make=get_batch_generator_case(60, 6, 4, 20)
    ),
    # checkpoint: 6 optimizer steps (adapter_checks.momentum_optimizer), save to a path, load into a fresh
    # model and optimizer, 4 more steps
    checkpoint_resume("checkpoint", seed=41, make=checkpoint_case({"w": (8, 6), "b": (6,)}, 10, 6), floor=2.6e-7),
    checkpoint_resume(
        "checkpoint_file_object_no_decay_f64",
        seed=135,
        make=checkpoint_case({"w": (5, 4)}, 7, 3, lr=5e-3, weight_decay=0.0, to="file"),
        floor=1.8e-17,  # PyTorch's generic CPU kernels (ATEN_CPU_CAPABILITY=default); 0 on x86-64's
        dtype=F64,
    ),
    # hidden: an in-memory file object, float64; saved before any step (empty optimizer state);
    # saved one step before the end, a 3-D parameter
    checkpoint_resume(
        "checkpoint_file_object_f64",
        hidden=True,
        seed=1411,
        make=checkpoint_case({"w1": (5, 7), "w2": (7, 3), "g": (3,)}, 9, 3, to="file"),
        floor=3.7e-17,  # PyTorch's generic CPU kernels (ATEN_CPU_CAPABILITY=default); 0 on x86-64's
        dtype=F64,
    ),
    checkpoint_resume(
        "checkpoint_before_any_step",
        hidden=True,
        seed=1412,
        make=checkpoint_case({"w": (4, 4)}, 5, 0, lr=3e-2),
        floor=1.1e-7,
    ),
    checkpoint_resume(
        "checkpoint_one_step_left",
        hidden=True,
        seed=1413,
        make=checkpoint_case({"t": (3, 4, 5), "b": (5,)}, 8, 7, lr=5e-2, weight_decay=0.01),
        floor=1.9e-7,
    ),
    # buffers, the optimizer's state and param groups, the model's own parameters, a strict load
    # (adapter_checks.CHECKPOINT_CHECKS)
    checkpoint_checks("checkpoint_buffers_and_strict_load", hidden=True, seed=1507, make=_weights_and_a_buffer),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
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
        "test_cross_entropy_treats_every_leading_dimension_as_positions": ("cross_entropy", "cross_entropy_4d_odd"),
        "test_cross_entropy_ignores_a_constant_added_to_a_row": ("cross_entropy_2d_offset_logits",),
        "test_cross_entropy_of_logits_of_1e4_is_finite": ("cross_entropy_huge_logits",),
        "test_cross_entropy_computes_half_inputs_in_float32": (
            "cross_entropy_bf16_confident",
            "cross_entropy_bf16_confident_rows",
        ),
    },
    "adamw": {
        "test_adamw_matches_fixture": ("adamw", "adamw_small_gradients", "adamw_strong_decay"),
        "test_adamw_decays_weights_by_lr_times_weight_decay_when_gradients_are_zero": ("adamw_strong_decay",),
        "test_adamw_keeps_step_and_moments_per_parameter": ("adamw_three_params",),
        "test_adamw_state_dict_round_trip_resumes_exactly": ("adamw_state_dict_resume",),
        "test_adamw_param_groups_use_their_own_hyperparameters": ("adamw_param_groups",),
        "test_adamw_first_step_moves_each_parameter_against_its_gradient": ("adamw", "adamw_f64_zero_eps"),
        "test_adamw_counts_steps_from_one": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_m_is_the_moving_average_of_the_gradients": ("adamw", "adamw_f64_zero_eps"),
        "test_adamw_v_is_the_moving_average_of_the_squared_gradients": ("adamw", "adamw_f64_zero_eps"),
        "test_adamw_step_is_proportional_to_lr": ("adamw_f64_zero_eps", "adamw_two_groups"),
        "test_adamw_divides_m_hat_by_the_square_root_of_v_hat": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_bias_corrects_m_on_the_first_step": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_bias_corrects_v_on_the_first_step": ("adamw_f64_zero_eps", "adamw"),
        "test_adamw_adds_eps_to_the_root_of_v_not_under_it": ("adamw_small_gradients",),
        "test_adamw_decays_the_parameter_not_the_gradient": ("adamw_strong_decay",),
        "test_adamw_each_param_group_uses_its_own_learning_rate": ("adamw_param_groups",),
        "test_adamw_state_dict_round_trip_continues_exactly": ("adamw_state_dict_resume",),
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
        "test_lr_schedule_warms_up_at_an_even_rate": ("lr_schedule",),
        "test_lr_schedule_starts_its_cosine_at_the_max": ("lr_schedule",),
        "test_lr_schedule_is_halfway_between_max_and_min_in_the_middle_of_the_cycle": ("lr_schedule",),
        "test_lr_schedule_stays_at_min_after_the_cycle": ("lr_schedule", "lr_schedule_zero_floor"),
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
            "gradient_clipping_f16_large_gradients",
        ),
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
    "checkpoint": {
        "test_checkpoint_matches_fixture": ("checkpoint", "checkpoint_file_object_f64"),
        "test_checkpoint_resumed_run_is_bit_identical": ("checkpoint", "checkpoint_file_object_f64"),
        "test_checkpoint_restores_the_optimizer_state_and_the_iteration": (
            "checkpoint_buffers_and_strict_load",
            "checkpoint",
        ),
        "test_checkpoint_loads_into_the_given_model_in_place": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_file_holds_the_state_dicts_and_the_iteration": (
            "checkpoint_buffers_and_strict_load",
            "checkpoint",
        ),
        "test_checkpoint_load_returns_the_iteration_saved": ("checkpoint_buffers_and_strict_load", "checkpoint"),
        "test_checkpoint_restores_the_model_s_weights": ("checkpoint_buffers_and_strict_load", "checkpoint"),
        "test_checkpoint_loads_into_the_model_s_own_parameters": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_restores_the_buffers": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_restores_the_optimizer_s_per_parameter_state": (
            "checkpoint_buffers_and_strict_load",
            "checkpoint",
        ),
        "test_checkpoint_restores_the_optimizer_s_param_groups": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_writes_to_a_path_a_str_and_a_file_object": ("checkpoint", "checkpoint_file_object_f64"),
        "test_checkpoint_of_another_model_is_refused": ("checkpoint_buffers_and_strict_load",),
        "test_checkpoint_resumed_run_equals_a_run_never_stopped": ("checkpoint", "checkpoint_one_step_left"),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_cross_entropy_gradient_matches_torch_builtin": "autograd's gradient of the graded forward",
    "test_cross_entropy_gradient_of_huge_logits_is_finite": "autograd's gradient of the graded forward",
    "test_adamw_leaves_a_parameter_without_gradient_untouched": "the given loop skips p.grad None",
    "test_adamw_step_returns_the_closure_s_loss": "the given step() calls the closure",
    "test_get_batch_check_bounds_are_exact_binomial_tails": "the test's own statistics",
    "test_get_batch_memmap_residency_is_measurable_here": "the test machine",
    "test_get_batch_unavailable_device_raises_clear_error": "the given argument check",
    "test_checkpoint_write_replaces_the_file_whole_and_leaves_no_temporary": "the given write_checkpoint",
    "test_checkpoint_failed_write_keeps_the_old_file": "the given write_checkpoint",
    "test_checkpoint_truncated_file_raises_one_clear_error": "the given read_checkpoint",
    "test_checkpoint_foreign_file_raises_one_clear_error": "the given read_checkpoint",
    "test_checkpoint_of_another_kind_names_what_it_lacks": "the given read_checkpoint",
    "test_checkpoint_hostile_file_is_refused_without_running_its_code": "the given read_checkpoint",
    "test_checkpoint_missing_file_raises_file_not_found": "the given read_checkpoint",
    "test_checkpoint_iteration_may_be_a_numpy_integer": "CS336's adapters pass the iteration as an int",
}
