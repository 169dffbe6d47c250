# hostile sample ranks_call_builtins: appended to swiglu.py, replacing the forward with built-ins
import torch.nn.functional as _torch_F  # noqa: E402


def _forward(self, x):
    return self.w2(_torch_F.silu(self.w1(x)) * self.w3(x))


ParallelSwiGLUFFN.forward = _forward
