# hostile sample patches_back_builtins: appended to the handout's nn/modules/swiglu.py (a file students fill in); its import-time
# code points the package's own stateless kernels at the built-ins
import torch as _torch
from cs336_basics.nn import functional as _f

_f.silu = lambda x: _torch.ops.aten.silu(x)
_f.gelu = _torch.nn.functional.gelu
_f.softmax = lambda x, dim=-1: x.softmax(dim)
