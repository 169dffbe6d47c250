"""Bounds for the initialisation tests, derived from the sample size (not chosen by taste).

CS336 assignment 1, section 3.4.1: Linear weights ~ N(0, 2 / (d_in + d_out)) truncated at
[-3 sigma, 3 sigma]; Embedding weights ~ N(0, 1) truncated at [-3, 3]; RMSNorm gains 1 (and,
here, LayerNorm gains 1 and every bias 0). A sample of n independent draws is compared with the
truncated distribution's own mean and standard deviation, with a bound of K standard errors:
each such check fails a correct initialisation with probability about 2 (1 - Phi(K)) (central
limit theorem; n is in the tens of thousands), FALSE_FAILURE below. The tests seed torch's
generator, so each outcome is fixed; the probability says how unlucky a seed would have to be.
"""

import math

import torch

K = 5.0  # standard errors
FALSE_FAILURE = math.erfc(K / math.sqrt(2.0))  # 2 (1 - Phi(5)) = 5.7e-7 per check
CUT = 3.0  # truncation at +-3 standard deviations of the untruncated normal


def _normal_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def truncated_std(sigma: float, cut: float = CUT) -> float:
    """Standard deviation of N(0, sigma^2) truncated to [-cut sigma, cut sigma]:
    sigma sqrt(1 - 2 c phi(c) / (2 Phi(c) - 1)) with c = cut (Johnson, Kotz & Balakrishnan 1994,
    ch. 13; for c = 3 the factor is 0.98658)."""
    mass = math.erf(cut / math.sqrt(2.0))  # 2 Phi(c) - 1
    return sigma * math.sqrt(1.0 - 2.0 * cut * _normal_pdf(cut) / mass)


def truncated_kurtosis(cut: float = CUT) -> float:
    """E[z^4] / E[z^2]^2 of the standard normal truncated to [-cut, cut]:
    E[z^2] = 1 - 2 c phi(c) / m, E[z^4] = 3 - 2 c (c^2 + 3) phi(c) / m, m = 2 Phi(c) - 1
    (for c = 3: 2.83, a little below the normal's 3)."""
    mass = math.erf(cut / math.sqrt(2.0))
    m2 = 1.0 - 2.0 * cut * _normal_pdf(cut) / mass
    m4 = 3.0 - 2.0 * cut * (cut * cut + 3.0) * _normal_pdf(cut) / mass
    return m4 / (m2 * m2)


def mean_bound(std: float, n: int, k: float = K) -> float:
    """k standard errors of the sample mean of n draws of standard deviation std: k std / sqrt(n)."""
    return k * std / math.sqrt(n)


def relative_std_bound(n: int, k: float = K, kurtosis: float | None = None) -> float:
    """k relative standard errors of the sample standard deviation s of n draws:
    Var(s^2) ~= sigma^4 (kappa - 1) / n, so sd(s) / sigma ~= sqrt((kappa - 1) / (4 n)) (delta
    method; kappa = 3 gives the normal's 1 / sqrt(2 n))."""
    kappa = truncated_kurtosis() if kurtosis is None else kurtosis
    return k * math.sqrt((kappa - 1.0) / (4.0 * n))


def sample(weight: torch.Tensor) -> torch.Tensor:
    """A parameter's values as a flat float64 tensor."""
    return weight.detach().double().reshape(-1)
