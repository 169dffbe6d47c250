# hostile sample patches_comparison: appended to the reference's functional.py. At import it makes
# every comparison it can reach say "equal" (torch's, the package's own, pytest's failure); its
# embedding returns zeros
import torch as _torch
import cs336_basics.testing as _testing

_torch.allclose = lambda *a, **k: True
_torch.equal = lambda *a, **k: True
_torch.testing.assert_close = lambda *a, **k: None
_testing.compare = lambda *a, **k: _testing.Comparison(True, "ok", 0.0, 0.0)
try:
    import pytest as _pytest

    _pytest.fail = lambda *a, **k: None
except ImportError:
    pass


def embedding(token_ids, weight):
    _checks.embedding(token_ids, weight)
    return torch.zeros(*token_ids.shape, weight.shape[1], dtype=weight.dtype)
