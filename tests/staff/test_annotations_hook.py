"""The course staff's suite runs under jaxtyping's import hook (pyproject.toml `addopts`): every
annotated function in cs336_basics.nn is checked against its shape annotations at each call, so
the reference's annotations are true, and a wrong shape fails before the body runs, naming the
argument. The handout runs without the hook: it decorates every function at import, which was
most of a student's `pytest -k <component>` run, and the argument checks name a wrong shape too
(tests/test_bad_input.py)."""

import jaxtyping
import pytest

from cs336_basics.nn import functional as F

from ..test_bad_input import W, x


def test_linear_shape_error_from_the_jaxtyping_hook_names_the_argument():
    with pytest.raises(jaxtyping.TypeCheckError, match=r"parameter 'weight'(.|\n)*d_out d_in"):
        F.linear(x(4, 63), W)


def test_rmsnorm_shape_error_from_the_jaxtyping_hook_names_the_argument():
    with pytest.raises(jaxtyping.TypeCheckError, match=r"parameter 'weight'(.|\n)*d_model"):
        F.rmsnorm(x(2, 64), x(63))
