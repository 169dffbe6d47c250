"""Which PyTorch built-ins a component may not use, and a recorder of the torch calls code makes.

Each graded component is to be written from elementary tensor operations (matmul, exp, sigmoid,
tanh, erf, sqrt, rsqrt, mean, sum, max, indexing, arithmetic, ...). The built-in that computes
the component itself (F.silu for silu, F.linear for linear, ...) is the tests' oracle, so a
component that calls it, or the built-in of a component it is made of, is not graded.

Calls are recorded through PyTorch's own hooks, not by reading source code:
TorchFunctionMode sees Python-level calls (torch.nn.functional.*, torch.*, Tensor methods,
torch.ops.*), TorchDispatchMode sees every ATen operator that runs (so a built-in reached by
another route, e.g. torch.ops.aten.silu or a torch.nn module, is seen too).

Public tests:  with assert_no_builtins("silu"): out = run_silu(x)
The grader records in its worker with CallRecorder and checks with forbidden_calls().
"""

import contextlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import MappingProxyType

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

_LINEAR = frozenset({"F.linear", "F.bilinear", "aten.linear", "aten.bilinear"})
_SILU = frozenset({"F.silu", "aten.silu", "aten.silu_"})
_GELU = frozenset({"F.gelu", "aten.gelu", "aten.gelu_"})
_GLU = frozenset({"F.glu", "aten.glu"})
_SOFTMAX = frozenset({
    "F.softmax", "F.log_softmax", "F.softmin", "F.gumbel_softmax", "torch.softmax", "torch.log_softmax",
    "torch._softmax", "torch._log_softmax", "torch.special.softmax", "torch.special.log_softmax",
    "Tensor.softmax", "Tensor.log_softmax", "aten.softmax", "aten._softmax", "aten.log_softmax",
    "aten._log_softmax", "aten._safe_softmax",
})
_RMSNORM = frozenset({"F.rms_norm", "aten.rms_norm", "aten._fused_rms_norm"})
_LAYERNORM = frozenset({"F.layer_norm", "F.group_norm", "aten.layer_norm", "aten.native_layer_norm",
                        "aten.group_norm", "aten.native_group_norm"})
_EMBEDDING = frozenset({"F.embedding", "F.embedding_bag", "aten.embedding", "aten.embedding_bag",
                        "aten._embedding_bag"})
# No component may reach for attention or whole-layer built-ins.
_ANYWHERE = frozenset({"F.scaled_dot_product_attention", "F.multi_head_attention_forward",
                       "aten.scaled_dot_product_attention", "aten._scaled_dot_product_attention_math",
                       "aten._scaled_dot_product_flash_attention_for_cpu",
                       "aten._scaled_dot_product_efficient_attention", "aten._native_multi_head_attention",
                       "aten._transformer_encoder_layer_fwd"})

_MHA = frozenset({"torch.nn.modules.activation.MultiheadAttention.forward", "F.multi_head_attention_forward",
                  "aten._native_multi_head_attention"})
_ROPE = frozenset({"torch.polar", "aten.polar", "torch.view_as_complex", "aten.view_as_complex"})
_DECODER = _ANYWHERE | _MHA | _LINEAR | _SILU | _GLU | _SOFTMAX | _RMSNORM | _EMBEDDING

# component -> the built-ins (canonical names, see call_name) it may not call
BANNED = MappingProxyType({
    "linear": _ANYWHERE | _LINEAR,
    "embedding": _ANYWHERE | _EMBEDDING,
    "silu": _ANYWHERE | _SILU,
    "gelu": _ANYWHERE | _GELU,
    "softmax": _ANYWHERE | _SOFTMAX,
    "rmsnorm": _ANYWHERE | _RMSNORM,
    "layernorm": _ANYWHERE | _LAYERNORM,
    "swiglu": _ANYWHERE | _LINEAR | _SILU | _GLU,
    "positionwise_ffn": _ANYWHERE | _LINEAR | _SILU | _GELU | _GLU,
    "ffn_block": _ANYWHERE | _LINEAR | _SILU | _GELU | _GLU | _RMSNORM | _LAYERNORM,
    # attention is softmax(Q K^T / sqrt(d_k)) V from matmuls and this package's softmax
    "attention": _ANYWHERE | _SOFTMAX,
    # RoPE as real arithmetic on adjacent pairs; the complex form is the oracle (Meta's llama)
    "rope": _ANYWHERE | _ROPE,
    "mha": _ANYWHERE | _MHA | _LINEAR | _SOFTMAX | _ROPE,
    "block": _DECODER | _ROPE,
    "lm": _DECODER | _ROPE,
    "generate": _DECODER | _ROPE,
    # Recorded in the process that calls the adapter only: the ranks it starts are other
    # processes, and what they call is not seen (PyTorch's DTensor tensor parallelism, the tests'
    # oracle, is not a torch function either; tests/test_parallel_layers.py counts collectives).
    "parallel": _ANYWHERE | _LINEAR | _SILU | _GLU,
})

_PREFIXES = (("torch.nn.functional.", "F."), ("torch._C._nn.", "F."), ("torch._C._special.special_", "torch.special."),
             ("torch._C._VariableFunctions.", "torch."), ("torch._VariableFunctionsClass.", "torch."),
             ("torch._C.TensorBase.", "Tensor."), ("TensorBase.", "Tensor."), ("Tensor.", "Tensor."))


def call_name(func) -> str:
    """A canonical name for a function seen by a torch mode: "F.silu", "torch.softmax",
    "Tensor.softmax", "aten.silu" (an ATen operator, overload dropped)."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        parts = str(func).split(".")  # "aten.silu.default"
        return ".".join(parts[:2])
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    module = getattr(func, "__module__", None)
    full = f"{module}.{qualname}" if module else qualname
    for prefix, short in _PREFIXES:
        if full.startswith(prefix):
            return short + full[len(prefix):]
    return full


def forbidden_calls(component: str, calls: Iterable[str]) -> list[str]:
    """The names among `calls` that `component` may not use, sorted."""
    return sorted(set(calls) & BANNED[component])


def explain(component: str, banned: list[str]) -> str:
    """The message a student sees when `component` called the built-ins `banned`."""
    return (f"{component} called {', '.join(banned)}: the PyTorch built-in that computes this component. "
            f"Write {component} from elementary tensor operations; the built-in is what the tests compare against.")


class _FunctionRecorder(TorchFunctionMode):
    def __init__(self, calls: set[str]):
        super().__init__()
        self.calls = calls

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.add(call_name(func))
        return func(*args, **(kwargs or {}))


class _DispatchRecorder(TorchDispatchMode):
    def __init__(self, calls: set[str], counter: list[int]):
        super().__init__()
        self.calls, self.counter = calls, counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.add(call_name(func))
        self.counter[0] += 1
        return func(*args, **(kwargs or {}))


class CallRecorder:
    """Records, while active, the canonical names of the torch functions and ATen operators
    called in this thread (`calls`) and how many operators ran (`operators`)."""

    def __init__(self, dispatch: bool = True):
        """dispatch=False records Python-level calls only: no ATen operator is seen (and
        `operators` stays 0), but nothing is imported (the dispatch mode imports torch._dynamo,
        ~3 s, at its first operator): what the public tests use."""
        self.calls: set[str] = set()
        self._counter = [0]
        self._modes = (_FunctionRecorder(self.calls),
                       _DispatchRecorder(self.calls, self._counter) if dispatch else contextlib.nullcontext())

    @property
    def operators(self) -> int:
        return self._counter[0]

    def __enter__(self) -> "CallRecorder":
        # the dispatch mode outermost: pushing and popping it must not pass through the function mode
        self._modes[1].__enter__()
        try:
            self._modes[0].__enter__()
        except BaseException:
            self._modes[1].__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._modes[0].__exit__(*exc)
        finally:
            self._modes[1].__exit__(*exc)


@contextmanager
def assert_no_builtins(component: str, dispatch: bool = True) -> Iterator[CallRecorder]:
    """Fails (AssertionError) if code run inside calls a built-in `component` may not use."""
    with CallRecorder(dispatch) as recorder:
        yield recorder
    banned = forbidden_calls(component, recorder.calls)
    if banned:
        raise AssertionError(explain(component, banned))
