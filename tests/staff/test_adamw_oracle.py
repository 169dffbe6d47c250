"""The reference's AdamW against torch.optim.AdamW over 200 float64 steps: the public tests
compare a student's with the fixtures the reference makes, and do not step torch.optim.AdamW
(that imports torch._dynamo, a second of CPU in every `pytest -k adamw`)."""

import torch

from cs336_basics.optim import AdamW
from cs336_basics.testing import tolerance
from tests._helpers import F64, assert_close
from tests.test_adamw import optimize

# Measured (max scaled error of the parameters against torch.optim.AdamW's, same inputs): 1.6e-16
# for 200 float64 steps of Adam (weight_decay 0, eps 0); 0 for 200 steps of decay alone (zero
# gradients). Both settings leave no room for where eps and the decay go, so CS336's Algorithm 1
# (eps on sqrt(v), decay after the update) agrees as closely; with both nonzero the two forms
# differ by ~lr^2 weight_decay per step, which the graded float32 cases keep below their tolerance.
ADAM_FLOOR, DECAY_FLOOR = 1.6e-16, 0.0


def test_adamw_moments_and_bias_correction_match_torch_builtin():
    # weight_decay 0 and eps 0: where eps and the decay go cannot matter, only m, v and their corrections
    hyper = dict(lr=1e-2, betas=(0.9, 0.999), eps=0.0, weight_decay=0.0)
    ours, theirs = optimize(AdamW, 200, **hyper), optimize(torch.optim.AdamW, 200, **hyper)
    assert_close(ours, theirs, tolerance(ADAM_FLOOR, F64), "AdamW vs torch.optim.AdamW")


def test_adamw_decay_alone_matches_torch_builtin():
    hyper = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    ours, theirs = (optimize(cls, 200, zero_grads=True, **hyper) for cls in (AdamW, torch.optim.AdamW))
    assert_close(ours, theirs, tolerance(DECAY_FLOOR, F64), "AdamW vs torch.optim.AdamW")
