"""Which PyTorch built-ins a component may not use, and a recorder of the torch calls code makes.

Each graded component is to be written from elementary tensor operations (matmul, exp, sigmoid,
tanh, erf, sqrt, rsqrt, mean, sum, max, indexing, arithmetic, ...). The built-in that computes
the component itself (F.silu for silu, F.linear for linear, ...) is the tests' oracle, so a
component that calls it, or the built-in of a component it is made of, is not graded.

Calls are recorded through PyTorch's own hooks, not by reading source code:
TorchFunctionMode sees Python-level calls (torch.nn.functional.*, torch.*, Tensor methods,
torch.ops.*), TorchDispatchMode sees every ATen operator that runs (so a built-in reached by
another route, e.g. torch.ops.aten.silu or a torch.nn module, is seen too), and, below both, an
observer at the dispatcher (the profiler's RecordFunction callbacks) sees
every operator the dispatcher calls, composite ones before they decompose, even while code
excludes the Python dispatch key or pops the mode stacks. The recorder checks on exit that its
modes and its observer are still the ones it installed (RecordingTampered otherwise).

Public tests:  with assert_no_builtins("silu"): out = run_silu(x)
The grader records in its worker with CallRecorder and checks with forbidden_calls().
"""

import contextlib
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import (
    BuiltinFunctionType,
    FunctionType,
    MappingProxyType,
    MethodDescriptorType,
    MethodWrapperType,
    WrapperDescriptorType,
)

import torch
from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler_legacy, _enable_profiler_legacy
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from cs336_basics import call_rule, elementary_ops, serial_pools

# The harness's own wrappers a call may pass through on its way from the student's code to what
# it calls: the serial pools, and the collective counters the parallel cases install in place
# of torch.distributed's functions (a call is judged as the student's frame behind them made it).
GRADER_WRAPPERS = (serial_pools.__file__, os.path.join(os.path.dirname(__file__), "nn", "parallel", "collectives.py"))

MAX_LIBRARY_CALLS_SHOWN = 5
LIBRARY_RULE = (
    "While a component runs, your code may call elementary tensor operations, Python's built-ins and "
    "standard library, NumPy (not numpy.random), einops, regex, tqdm and your own package; from torch.nn only "
    "Module, Parameter, the containers, Identity, Dropout and torch.nn.init, from torch.optim only the Optimizer base class; "
    "nothing else (torch.nn's layers and losses, torch.nn.utils, torch.optim's optimizers and schedulers, "
    "torch.utils.data, other packages such as tokenizers or tiktoken). See README.md, 'The one rule'."
)


def _every_alias(*ops: str) -> frozenset[str]:
    """Every public name of these ops that exists in this torch: torch.X, torch.nn.functional.X
    (F.X), torch.special.X, Tensor.X and torch.ops.aten.X (aten.X), in-place forms X_ included,
    as call_name() writes them (e.g. "rms_norm" gives F.rms_norm, torch.rms_norm, aten.rms_norm)."""
    names = set()
    for op in ops:
        for form in (op, op + "_"):
            for space, short in (
                (torch, "torch."),
                (torch.nn.functional, "F."),
                (torch.special, "torch.special."),
                (torch.Tensor, "Tensor."),
            ):
                if callable(getattr(space, form, None)):
                    names.add(short + form)
            if hasattr(torch.ops.aten, form):
                names.add("aten." + form)
    return frozenset(names)


_LINEAR = _every_alias("linear", "bilinear")
_SILU = _every_alias("silu")
_GELU = _every_alias("gelu")
_GLU = _every_alias("glu")
_SOFTMAX = _every_alias(
    "softmax", "log_softmax", "softmin", "gumbel_softmax", "_softmax", "_log_softmax", "_safe_softmax"
)
_RMSNORM = _every_alias("rms_norm", "_fused_rms_norm")
_LAYERNORM = _every_alias("layer_norm", "native_layer_norm", "group_norm", "native_group_norm")
_EMBEDDING = _every_alias("embedding", "embedding_bag", "_embedding_bag")
# No component may reach for attention or whole-layer built-ins.
_ANYWHERE = _every_alias(
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "_scaled_dot_product_attention_math",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_native_multi_head_attention",
    "_transformer_encoder_layer_fwd",
)

_MHA = frozenset(
    {
        "torch.nn.modules.activation.MultiheadAttention.forward",
        "F.multi_head_attention_forward",
        "aten._native_multi_head_attention",
    }
)
# The loss from exp, log, sum, max and indexing: none of the built-in losses, log-softmax or logsumexp.
_CROSS_ENTROPY = _SOFTMAX | _every_alias(
    "cross_entropy",
    "nll_loss",
    "cross_entropy_loss",
    "nll_loss_nd",
    "nll_loss_forward",
    "nll_loss2d_forward",
    "logsumexp",
)
# torch.optim.Adam/AdamW's fused kernels (their foreach forms are elementary: cs336_basics/elementary_ops.py).
_ADAMW = _every_alias("_fused_adam", "_fused_adamw")
_DECODER = _ANYWHERE | _MHA | _LINEAR | _SILU | _GLU | _SOFTMAX | _RMSNORM | _EMBEDDING

# component -> the built-ins (canonical names, see call_name) it may not call, where they are more
# than _ANYWHERE (banned_for: a component not listed here is held to _ANYWHERE)
BANNED = MappingProxyType(
    {
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
        "rope": _ANYWHERE,  # complex arithmetic (view_as_complex, polar) is elementary, as Meta's llama writes it
        "mha": _ANYWHERE | _MHA | _LINEAR | _SOFTMAX,
        "block": _DECODER,
        "lm": _DECODER,
        "generate": _DECODER,
        "cross_entropy": _ANYWHERE | _CROSS_ENTROPY,
        "adamw": _ANYWHERE | _ADAMW,
        "lr_schedule": _ANYWHERE,  # Python arithmetic: no built-in computes it
        "gradient_clipping": _ANYWHERE,  # clip_grad_norm_ is library code (call_rule)
        # no built-in samples batches or writes checkpoints (torch.save and torch.load are tools)
        "get_batch": _ANYWHERE,
        "checkpoint": _ANYWHERE,
        # Recorded in the process that calls the adapter and in every rank it starts
        # (nn/parallel/launch.py, recording_ranks); PyTorch's DTensor tensor parallelism, the tests'
        # oracle, is not a torch function (tests/test_parallel_layers.py counts collectives).
        "parallel": _ANYWHERE | _LINEAR | _SILU | _GLU,
        # byte-level BPE is Python on bytes: no torch built-in computes it
        "train_bpe": frozenset(),
        "tokenizer": frozenset(),
    }
)


def banned_for(component: str) -> frozenset[str]:
    """The built-ins `component` may not call: its BANNED entry, or the ones no component may call."""
    return BANNED.get(component, _ANYWHERE)


_PREFIXES = (
    ("torch.nn.functional.", "F."),
    ("torch._C._nn.", "F."),
    ("torch._C._special.special_", "torch.special."),
    ("torch._C._VariableFunctions.", "torch."),
    ("torch._VariableFunctionsClass.", "torch."),
    ("torch._C.TensorBase.", "Tensor."),
    ("TensorBase.", "Tensor."),
    ("Tensor.", "Tensor."),
)


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
            return short + full[len(prefix) :]
    return full


def forbidden_calls(component: str, calls: Iterable[str]) -> list[str]:
    """The names among `calls` that `component` may not use, sorted: the ATen operators that are
    not elementary (elementary_ops), its banned built-ins by any public name, and the library calls
    its code made that call_rule's table does not allow it."""
    calls = set(calls)
    library = {c for c in calls if (callee := call_rule.callee_of(c)) and not call_rule.allowed_in(component, callee)}
    return sorted((calls & banned_for(component)) | set(elementary_ops.not_elementary(component, calls)) | library)


ELEMENTARY_RULE = (
    "An operator is elementary when it creates, copies or views tensors, indexes, applies a named "
    "mathematical function elementwise (exp, log, sqrt, sigmoid, tanh, erf, ...), compares, reduces "
    "(sum, mean, max, var, norm, ...), scans, sorts, multiplies matrices or draws random numbers "
    "(cs336_basics/elementary_ops.py). Layers, losses, normalisations, softmax in any form and "
    "log-sum-exp are not."
)


def explain(component: str, banned: list[str]) -> str:
    """The message a student sees when `component` called the built-ins, operators or library code `banned`."""
    library = [b for b in banned if call_rule.callee_of(b) is not None]
    operators = [b for b in banned if b not in library and b not in banned_for(component) and b.startswith("aten.")]
    builtins = [b for b in banned if b not in library and b not in operators]
    parts = []
    if builtins:
        parts.append(
            f"{component} called {', '.join(builtins)}: the PyTorch built-in that computes this component. "
            f"Write {component} from elementary tensor operations; the built-in is what the tests compare against."
        )
    if operators:
        parts.append(
            f"{component} ran {', '.join(operators)}: not an elementary tensor operation. Whatever Python "
            f"name reached it (torch.X, torch.nn.functional.X, Tensor.X, a module), write {component} "
            f"from elementary operations instead. {ELEMENTARY_RULE}"
        )
    if library:
        calls = "\n".join(f"  {c}" for c in library[:MAX_LIBRARY_CALLS_SHOWN])
        more = len(library) - MAX_LIBRARY_CALLS_SHOWN
        parts.append(
            f"{component} called library code the rule does not allow (the call, then your line that made it):\n{calls}"
            + (f"\n  ... and {more} more" if more > 0 else "")
            + f"\n{LIBRARY_RULE}"
        )
    return "\n".join(parts)


# The kinds of function whose equality is identity (a method-wrapper's: that of its descriptor and
# its object). The recorder keeps the ones it has named in a set; any other callable is named at
# each call, since its own __eq__ could claim to be a function already named.
_NAMED_ONCE = frozenset(
    {
        FunctionType,
        BuiltinFunctionType,
        MethodDescriptorType,
        WrapperDescriptorType,
        MethodWrapperType,
        torch._ops.OpOverload,
        torch._ops.OpOverloadPacket,
        torch._ops.TorchBindOpOverload,
    }
)


class _FunctionRecorder(TorchFunctionMode):
    """Adds call_name(func) of each torch function called to `calls`, naming a function once (a
    repeated call costs one lookup, and few events under the library call tracer's profile hook)."""

    def __init__(self, calls: set[str]):
        super().__init__()
        self.calls = calls
        self.named: set = set()  # the functions of _NAMED_ONCE kinds already in `calls`

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if type(func) not in _NAMED_ONCE:
            self.calls.add(call_name(func))
        elif func not in self.named:
            self.named.add(func)
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


class RecordingTampered(Exception):
    """The code recorded switched the recorder's modes or its dispatcher observer off or swapped them."""


class _DispatcherObserver:
    """The operators the dispatcher calls in this thread, seen by the legacy profiler's
    RecordFunction callbacks (torch/autograd/profiler_legacy.py): below the Python dispatch key
    and the mode stacks, and cheap (no kineto, no thread). Fresh random markers open and close the
    recording: the records returned at the end must hold both, or they are not this session's
    (restarted) or RecordFunction was left switched off."""

    _CONFIG = ProfilerConfig(
        ProfilerState.CPU, False, False, False, False, False, torch._C._profiler._ExperimentalConfig()
    )

    def __init__(self, calls: set[str]):
        self.calls = calls
        token = secrets.token_hex(16)
        self.markers = (f"cs336-recorder-start-{token}", f"cs336-recorder-end-{token}")

    def __enter__(self):
        _enable_profiler_legacy(self._CONFIG)
        with torch.autograd.profiler.record_function(self.markers[0]):
            pass

    def __exit__(self, *exc) -> None:
        with torch.autograd.profiler.record_function(self.markers[1]):  # missing if RecordFunction is off
            pass
        try:
            records = _disable_profiler_legacy()
        except RuntimeError as e:
            raise RecordingTampered(f"the profiler was switched off ({e})") from None
        names = {event.name() for thread in records for event in thread if event.kind() == "push"}
        if not set(self.markers) <= names:
            raise RecordingTampered(
                "the profiler was restarted or RecordFunction switched off: its records are not the recorder's"
            )
        self.calls.update("aten." + n[len("aten::") :] for n in names if n.startswith("aten::"))


class CallRecorder:
    """Records, while active, the canonical names of the torch functions and ATen operators
    called in this thread (`calls`) and how many operators ran (`operators`)."""

    def __init__(self, dispatch: bool = True, package_dir: str | None = None, harness: tuple[str, ...] = ()):
        """The function mode and the dispatcher observer record always: every operator that runs
        is seen, so the public tests and the grader reach the same verdict. dispatch=True adds
        the Python dispatch mode (a second vantage point on the operators, and `operators`
        counts them; it imports torch._dynamo, ~3 s, at its first operator: the public tests
        leave it out). Either way the library calls of the code in
        `package_dir` (default: the imported cs336_basics package's directory) are recorded
        (call_rule.LibraryCallTracer), except those of the `harness` files (the public tests'
        fixture loading and comparison, which run inside the recording)."""
        self.calls: set[str] = set()
        self._counter = [0]
        self._dispatch = dispatch
        self._modes = (
            _FunctionRecorder(self.calls),
            _DispatchRecorder(self.calls, self._counter) if dispatch else contextlib.nullcontext(),
            _DispatcherObserver(self.calls),
        )
        self._tracer = call_rule.LibraryCallTracer(
            self.calls, package_dir or _package_dir(), exclude=(__file__, *harness), through=GRADER_WRAPPERS
        )
        self._depths = (0, 0)

    @property
    def operators(self) -> int:
        return self._counter[0]

    @property
    def entered(self) -> set[tuple[str, int]]:
        """(path, first line) of each def of the package that ran (cs336_basics/source_rule.py)."""
        return self._tracer.entered

    def __enter__(self) -> "CallRecorder":
        # the observer outermost, then the dispatch mode: pushing and popping it must not pass
        # through the function mode
        with contextlib.ExitStack() as stack:
            stack.enter_context(self._modes[2])
            stack.enter_context(self._modes[1])
            self._modes[0].__enter__()
            stack.pop_all()
        self._depths = (torch._C._len_torch_function_stack(), len(_get_current_dispatch_mode_stack()))
        self._tracer.__enter__()  # last in, first out: the recorder's own work is not traced
        return self

    def _intact(self) -> bool:
        """The recorder's modes are still on top of their stacks, at the depths they were pushed to."""
        functions, dispatches = self._depths
        if torch._C._len_torch_function_stack() != functions or (
            torch._C._get_function_stack_at(functions - 1) is not self._modes[0]
        ):
            return False
        if not self._dispatch:
            return True
        stack = _get_current_dispatch_mode_stack()
        return len(stack) == dispatches and stack[-1] is self._modes[1]

    def __exit__(self, *exc) -> None:
        traced = self._tracer.intact()
        self._tracer.__exit__(*exc)
        intact = self._intact()
        try:
            if intact:
                self._modes[0].__exit__(*exc)
                self._modes[1].__exit__(*exc)
            else:  # back to the stacks as they were before __enter__, whatever is on them now
                from torch.overrides import _pop_mode
                from torch.utils._python_dispatch import _pop_mode as _pop_dispatch_mode

                while torch._C._len_torch_function_stack() >= self._depths[0] > 0:
                    _pop_mode()
                while self._dispatch and len(_get_current_dispatch_mode_stack()) >= self._depths[1] > 0:
                    _pop_dispatch_mode()
        finally:
            self._modes[2].__exit__(*exc)
        if not intact:
            raise RecordingTampered("the recorder's torch modes were popped or covered by other modes")
        if not traced:
            raise RecordingTampered("the recorder's profile hook (sys.setprofile) was replaced or switched off")


def _package_dir() -> str:
    """The directory of the cs336_basics package imported here (the student's, in a submission)."""
    import sys

    return os.path.dirname(os.path.realpath(sys.modules["cs336_basics"].__file__))


@contextmanager
def assert_no_builtins(component: str, dispatch: bool = True, harness: tuple[str, ...] = ()) -> Iterator[CallRecorder]:
    """Fails (AssertionError) if code run inside calls a built-in or library code `component` may
    not use (`harness`: files of the package whose calls are not the component's, see CallRecorder)."""
    with CallRecorder(dispatch, harness=harness) as recorder:
        yield recorder
    banned = forbidden_calls(component, recorder.calls)
    if banned:
        raise AssertionError(explain(component, banned))
