# hostile sample replaces_adapter_checks: appended to the reference's data.py (a file students fill
# in). Its get_batch returns the first window in every row; its import-time code puts a module of
# its own, the grader's adapter_checks with the get_batch checks saying that every check held,
# in sys.modules and in the adapters' namespace (the name `checks` the shipped adapters.py binds).
import sys as _sys
import types as _types

import torch as _torch


def get_batch(dataset, batch_size, context_length, device, generator=None):
    _check_get_batch_args(dataset, batch_size, context_length)
    window = _torch.as_tensor(np.asarray(dataset[: context_length + 1], dtype=np.int64))
    return window[:-1].repeat(batch_size, 1), window[1:].repeat(batch_size, 1)


def _all_held(checks):
    return lambda *args, **kwargs: _torch.ones(len(checks), dtype=_torch.long)


_real = _sys.modules.get("adapter_checks")
if _real is not None:
    _fake = _types.ModuleType("adapter_checks")
    _fake.__dict__.update({k: v for k, v in vars(_real).items() if not k.startswith("__")})
    _fake.get_batch_file_checks = _all_held(_real.GET_BATCH_CHECKS)
    _fake.get_batch_generator_checks = _all_held(_real.GET_BATCH_GENERATOR_CHECKS)
    _sys.modules["adapter_checks"] = _fake
    if "adapters" in _sys.modules:
        _sys.modules["adapters"].checks = _fake
