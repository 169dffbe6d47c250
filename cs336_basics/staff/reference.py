"""The reference computation of a case: the grader's copy of tests/adapters.py (the course's
`run_*` functions, with the checks of tests/adapter_checks.py), run on this repository's
cs336_basics in float64."""

import functools
import importlib.util
import sys
from types import ModuleType

import torch

from cs336_basics import REPO

ADAPTERS = REPO / "tests" / "adapters.py"
ADAPTER_CHECKS = REPO / "tests" / "adapter_checks.py"  # the checks adapters.py imports, copied beside it


def _from_path(name: str, path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def adapters() -> ModuleType:
    """tests/adapters.py, loaded from its path (the tests folder is not an installed package), its
    checks found as the grader's worker gives them: tests/adapter_checks.py as the top-level module
    adapter_checks."""
    if "adapter_checks" not in sys.modules:
        sys.modules["adapter_checks"] = _from_path("adapter_checks", ADAPTER_CHECKS)
    return _from_path("cs336_reference_adapters", ADAPTERS)


def map_tensors(kwargs: dict, fn) -> dict:
    """kwargs with fn applied to every tensor, including those in a dict of tensors."""
    out = {}
    for key, value in kwargs.items():
        if isinstance(value, torch.Tensor):
            out[key] = fn(value)
        elif isinstance(value, dict):
            out[key] = {k: fn(v) for k, v in value.items()}
        else:
            out[key] = value
    return out


def expected_output(adapter: str, kwargs: dict) -> torch.Tensor:
    """The adapter on kwargs upcast to float64: the float64 truth a case's outputs are judged by."""
    upcast = map_tensors(kwargs, lambda t: t.double() if t.is_floating_point() else t)
    with torch.no_grad():
        return getattr(adapters(), adapter)(**upcast).to(torch.float64)
