import contextlib as _cl
import operator as _op

import torch.utils._python_dispatch as _pd

_C = torch._C
_keys = _C.DispatchKeySet(_C.DispatchKey.Python) | _C.DispatchKeySet(_C.DispatchKey.PythonTLSSnapshot)


def softmax(x, dim: int = -1):
    _checks.softmax(x, dim)
    x_c = _upcast(x)
    dead = (x_c == float("-inf")).all(dim=dim, keepdim=True)
    x_c = torch.where(dead, torch.zeros_like(x_c), x_c)  # fully masked row: finite gradient
    with _cl.ExitStack() as st:
        st.enter_context(_C.DisableTorchFunction())
        st.enter_context(_pd._disable_current_modes())
        st.enter_context(_C._ExcludeDispatchKeyGuard(_keys))
        probs = _op.methodcaller("softmax", dim)(x_c)
    return _as(torch.where(dead, torch.zeros_like(probs), probs), x.dtype)
