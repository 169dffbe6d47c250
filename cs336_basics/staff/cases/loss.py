"""Cross-entropy: the builder of its inputs, then its cases and what they grade of the public tests,
then its mistakes and accepted variants."""

from functools import partial

import torch

from cs336_basics.nn import functional as F
from cs336_basics.staff.cases.case import BF16, BIG, F16, F64, B, Case
from cs336_basics.staff.cases.draw import Make, edited, randint, randn
from cs336_basics.staff.mistakes import mistake, up, variant


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


cross_entropy = partial(Case, component="cross_entropy", adapter="run_cross_entropy")


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
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_cross_entropy_gradient_matches_torch_builtin": "autograd's gradient of the graded forward",
    "test_cross_entropy_gradient_of_huge_logits_is_finite": "autograd's gradient of the graded forward",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# ---- cross_entropy (functional.cross_entropy) ----------------------------------------------------

NOT_FINITE_LOSS = (
    "a loss that is not finite for logits of size 1e4 (exp of a large logit overflowing, or the log of a "
    "probability that rounded to 0)"
)


def _flat(inputs, targets):
    x = up(inputs)
    return x.reshape(-1, x.shape[-1]), targets.reshape(-1)


def _target_logit(x, targets):
    return x.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def _logsumexp(x, dim=-1):
    m = x.amax(dim, keepdim=True)
    return (torch.log(torch.exp(x - m).sum(dim, keepdim=True)) + m).squeeze(dim)


@mistake(
    "cross_entropy-log_of_probability",
    F,
    "cross_entropy",
    diagnosis="cross-entropy as -log(softmax(x)[target]): a probability that rounds to 0 gives log(0) = -inf "
    "(use logsumexp(x) - x[target])",
    shows=NOT_FINITE_LOSS,
)
def cross_entropy_log_of_softmax(inputs, targets):
    x, t = _flat(inputs, targets)
    probs = F.softmax(x, dim=-1)  # stable, but a tiny probability rounds to 0 and its log is -inf
    return (-torch.log(_target_logit(probs, t))).mean().to(inputs.dtype)


@mistake(
    "cross_entropy-no_max_subtraction",
    F,
    "cross_entropy",
    diagnosis="cross-entropy as log(sum(exp(x))) - x[target] without subtracting the max (exp overflows)",
    shows=NOT_FINITE_LOSS,
)
def cross_entropy_no_max_subtraction(inputs, targets):
    x, t = _flat(inputs, targets)
    return (torch.log(torch.exp(x).sum(-1)) - _target_logit(x, t)).mean().to(inputs.dtype)


@mistake(
    "cross_entropy-sum_not_mean",
    F,
    "cross_entropy",
    diagnosis="cross-entropy summed over positions instead of averaged",
)
def cross_entropy_sum_not_mean(inputs, targets):
    x, t = _flat(inputs, targets)
    return (_logsumexp(x) - _target_logit(x, t)).sum().to(inputs.dtype)


@mistake(
    "cross_entropy-normalised_over_positions",
    F,
    "cross_entropy",
    diagnosis="cross-entropy with the softmax over the first (batch) dimension instead of the last (classes)",
)
def cross_entropy_normalised_over_positions(inputs, targets):
    x = up(inputs)
    log_probs = x - _logsumexp(x, 0).unsqueeze(0)
    return (-_target_logit(log_probs, targets)).mean().to(inputs.dtype)


@mistake(
    "cross_entropy-indexed_not_gathered",
    F,
    "cross_entropy",
    diagnosis="cross-entropy taking x[:, targets] (every row's logit of every target) instead of each "
    "row's own target logit (gather)",
)
def cross_entropy_indexed_not_gathered(inputs, targets):
    x, t = _flat(inputs, targets)
    return (_logsumexp(x)[:, None] - x[:, t]).mean().to(inputs.dtype)  # x[:, t] is (N, N)


@mistake(
    "cross_entropy-no_float32_upcast",
    F,
    "cross_entropy",
    diagnosis="cross-entropy computed in the input's 16-bit dtype (bfloat16 cannot hold 1 + exp(-3), so a "
    "confident model's loss is 6 % off): upcast the logits to float32, compute, cast the loss back once",
)
def cross_entropy_no_upcast(inputs, targets):
    # the reference with its upcast deleted
    shifted = inputs - inputs.amax(dim=-1, keepdim=True)
    log_normalizer = shifted.exp().sum(dim=-1).log()
    return (log_normalizer - shifted.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)).mean()


@variant("cross_entropy-logsumexp", F, "cross_entropy")
def cross_entropy_logsumexp(inputs, targets):
    x, t = _flat(inputs, targets)
    return (torch.logsumexp(x, -1) - _target_logit(x, t)).mean().to(inputs.dtype)


@variant("cross_entropy-max_plus_log_sum_exp", F, "cross_entropy")
def cross_entropy_max_plus_log_sum_exp(inputs, targets):
    # the textbook m + log(sum(exp(x - m))) - x[t]: adding m back rounds at ulp(m), so for logits
    # near 1000 the loss (a few units) keeps ~1e-14 of relative accuracy, not ~1e-16
    x, t = _flat(inputs, targets)
    m = x.detach().amax(-1, keepdim=True)
    lse = m.squeeze(-1) + torch.log(torch.exp(x - m).sum(-1))
    return (lse - _target_logit(x, t)).mean().to(inputs.dtype)


@variant("cross_entropy-shifted_minus_log_normalizer", F, "cross_entropy")
def cross_entropy_log_softmax(inputs, targets):
    # -mean(log_softmax(x)[t]) with log_softmax = x - m - log(sum(exp(x - m))), as torch computes it
    x, t = _flat(inputs, targets)
    shifted = x - x.detach().amax(-1, keepdim=True)
    log_probs = shifted - torch.log(torch.exp(shifted).sum(-1, keepdim=True))
    return (-_target_logit(log_probs, t)).mean().to(inputs.dtype)
