"""Property-based agreement: over random shapes, scales, offsets and dtypes, every kernel agrees
with its PyTorch built-in run in the same dtype (KERNELS in tests/test_dtypes.py).

Domain: 1-4 leading dims of size 1-3, last dim d in 4..16, x = scale * (offset + N(0, 1)) with
scale in 1e-3..1e3 (log-uniform) and offset in [-1, 1]. Excluded, because the scaled error there
measures the conditioning of the case rather than the kernel:
- d < 4: a lone output of an FFN with biases can cancel to ~0 (b2 against W2 h), so any rounding
  before the bias add (ours) is an unbounded relative error; d = 1 layernorm is its bias
  (test_dtypes.py pins that).
- GELU outputs that vanish (RMS below 10% of the input's): the whole tensor sits in the left
  tail, where 1 + erf(x / sqrt 2) (and 1 + tanh) cancels in float32; ours and torch's both drift
  from the float64 truth, from ~1e-5 relative at x = -3 to O(1) at x = -5.5 (measured).
- float16 cases whose built-in output overflows (e.g. swiglu's gate * up at scale 1e3).
"""

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cs336_basics.testing import compare, tolerance

from ..test_dtypes import DTYPES, KERNELS, inputs

pytestmark = pytest.mark.slow  # second tier: hypothesis over shapes, scales and dtypes

# Max scaled error of ours against the built-in over this domain, the largest of three runs of
# 600-800 uniform draws per kernel and dtype plus 300-500 hypothesis examples per kernel (the
# runs agree within ~2x; on the last run the largest error is 0.25 of its tolerance). Below the
# unit roundoff (bf16 3.9e-3, fp16 4.9e-4) tolerance() uses the roundoff. positionwise_ffn in
# half precision: ours rounds W1 x (and W2 h) to the dtype before adding the bias, torch's addmm
# rounds once, e.g. bf16 max scaled error vs float64 truth 1.4e-2 (ours) vs 4.8e-3 (torch).
FLOOR = {  #                float32   float64   bfloat16  float16
    "linear": dict(zip(DTYPES, (2.8e-7, 5.3e-16, 0.0, 0.0), strict=True)),
    "embedding": dict(zip(DTYPES, (0.0, 0.0, 0.0, 0.0), strict=True)),
    "silu": dict(zip(DTYPES, (1.1e-7, 1.8e-16, 0.0, 1.9e-4), strict=True)),
    "gelu": dict(zip(DTYPES, (3.2e-6, 6.3e-16, 5.7e-5, 2.7e-4), strict=True)),
    "gelu_tanh": dict(zip(DTYPES, (3.8e-7, 4.9e-16, 3.0e-7, 2.6e-4), strict=True)),
    "relu": dict(zip(DTYPES, (0.0, 0.0, 0.0, 0.0), strict=True)),
    "swiglu": dict(zip(DTYPES, (9.4e-7, 1.7e-15, 0.0, 8.5e-5), strict=True)),
    "positionwise_ffn": dict(zip(DTYPES, (7.1e-7, 1.1e-15, 1.9e-2, 2.7e-3), strict=True)),
    "rmsnorm": dict(zip(DTYPES, (0.0, 0.0, 0.0, 0.0), strict=True)),
    "layernorm": dict(zip(DTYPES, (6.7e-7, 1.1e-15, 1.3e-3, 5.3e-4), strict=True)),
    "softmax": dict(zip(DTYPES, (2.3e-7, 5.4e-16, 2.9e-3, 5.3e-4), strict=True)),
}

cases = st.fixed_dictionaries(
    {
        "lead": st.lists(st.integers(1, 3), min_size=1, max_size=4),
        "d": st.integers(4, 16),
        "scale": st.floats(-3.0, 3.0).map(lambda e: 10.0**e),
        "offset": st.floats(-1.0, 1.0),
        "dtype": st.sampled_from(DTYPES),
        "seed": st.integers(0, 2**16),
    }
)


def _rms(t: torch.Tensor) -> float:
    return float(t.double().pow(2).mean().sqrt())


def _compare_with_builtin(name: str, case: dict):
    """compare() of ours against the built-in on this case, or None outside the domain."""
    dtype = case["dtype"]
    args = inputs(name, (*case["lead"], case["d"]), case["scale"], case["offset"], dtype, case["seed"])
    ours, builtin = KERNELS[name]
    expected = builtin(*args)
    if not bool(expected.isfinite().all()):
        return None
    if name in ("gelu", "gelu_tanh") and _rms(expected) < 0.1 * _rms(args[0]):
        return None
    return compare(ours(*args), expected, tolerance(FLOOR[name][dtype], dtype), dtype)


@pytest.mark.parametrize("name", KERNELS)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=cases)
def test_matches_torch_builtin_on_random_inputs(name, case):
    result = _compare_with_builtin(name, case)
    assume(result is not None)
    assert result.ok, f"{name} vs built-in on {case}:\n{result.message}"
