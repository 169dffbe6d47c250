"""torch.optim.Optimizer's own methods (add_param_group, zero_grad, state_dict, ...) are wrapped
in torch._disable_dynamo, which imports torch._dynamo the first time each runs, so that
torch.compile leaves them alone: about a second of CPU, more than the tests of a component take.
A student's AdamW is a torch.optim.Optimizer, so every `pytest -k adamw` would pay it. The tests
never compile, so each wrapper is told once that its method needs no disabling. The attribute is
the one the wrapper caches its disabled method in (torch/_compile.py); should a torch release
change it, this does nothing and the tests only run slower (a staff test then fails).
"""

import torch

DISABLE_WRAPPER = "_disable_dynamo.<locals>.inner"  # torch._disable_dynamo's wrapper's qualified name
CACHE = "__dynamo_disable"  # where the wrapper keeps the disabled method


def skip_dynamo_in_optimizer_methods() -> list[str]:
    """Point every torch._disable_dynamo wrapper among torch.optim.Optimizer's methods at the
    method itself; the names of those it found."""
    found = []
    for name, attr in vars(torch.optim.Optimizer).items():
        code = getattr(attr, "__code__", None)
        method = getattr(attr, "__wrapped__", None)
        if code is not None and code.co_qualname == DISABLE_WRAPPER and method is not None:
            setattr(method, CACHE, method)
            found.append(name)
    return found
