"""Bounds for the initialisation tests, derived from the sample size (not chosen by taste).

CS336 assignment 1, section 3.4.1: Linear weights ~ N(0, 2 / (d_in + d_out)) truncated at
[-3 sigma, 3 sigma]; Embedding weights ~ N(0, 1) truncated at [-3, 3]; RMSNorm gains 1 (and,
here, LayerNorm gains 1 and every bias 0). A sample of n independent draws is compared with the
truncated distribution's own mean and standard deviation, with a bound of K standard errors:
each such check fails a correct initialisation with probability about 2 (1 - Phi(K)) (central
limit theorem; n is in the tens of thousands), FALSE_FAILURE below. The tests seed torch's
generator, so each outcome is fixed; the probability says how unlucky a seed would have to be.

The bounds themselves live in tests/adapter_checks.py (which the grader takes with
tests/adapters.py, whose init-check adapters grade the same properties); this module names them
for the public tests.
"""

from .adapter_checks import (
    INIT_CHECKS,
    INIT_CUT,
    INIT_FALSE_FAILURE,
    INIT_K,
    init_checks,
    init_sample,
    mean_bound,
    relative_std_bound,
    truncated_kurtosis,
    truncated_std,
)

K, CUT, FALSE_FAILURE, sample = INIT_K, INIT_CUT, INIT_FALSE_FAILURE, init_sample

__all__ = ["CUT", "FALSE_FAILURE", "INIT_CHECKS", "K", "init_checks", "mean_bound", "relative_std_bound"]
__all__ += ["sample", "truncated_kurtosis", "truncated_std"]
