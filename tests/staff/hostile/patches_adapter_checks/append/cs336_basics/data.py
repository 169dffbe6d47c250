# hostile sample patches_adapter_checks: appended to the reference's data.py (a file students fill
# in). Its get_batch returns the first window in every row; its import-time code rewrites the
# grader's checks of get_batch (adapter_checks, which the adapters imported before this package)
# to say that every check held.
import sys as _sys

import torch as _torch


def get_batch(dataset, batch_size, context_length, device, generator=None):
    _check_get_batch_args(dataset, batch_size, context_length)
    window = _torch.as_tensor(np.asarray(dataset[: context_length + 1], dtype=np.int64))
    return window[:-1].repeat(batch_size, 1), window[1:].repeat(batch_size, 1)


def _all_held(checks):
    return lambda *args, **kwargs: _torch.ones(len(checks), dtype=_torch.long)


_checks = _sys.modules.get("adapter_checks")
if _checks is not None:
    _checks.get_batch_checks = _all_held(_checks.GET_BATCH_CHECKS)
    _checks.get_batch_generator_checks = _all_held(_checks.GET_BATCH_GENERATOR_CHECKS)
