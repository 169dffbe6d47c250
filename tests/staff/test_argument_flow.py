"""Argument flow: every input a component is given can change its output in a public case.

The variants are generated from the code, not listed by hand:

- every parameter of every adapter (tests/adapters.py: the `run_*` and `get_*` functions) is
  *dropped*: the adapter runs with that argument replaced (see `Dropped`), and at least one public
  case that reaches the adapter (its fixture's adapter, or one that calls it) must fail;
- every argument of every module class's `__init__` and `forward` (cs336_basics.nn.modules and
  nn.parallel) and of every kernel (nn.functional) is dropped *on its way down*: replaced only
  while one parent builds or calls it (`parent`: the code that calls it runs in a method of
  another module, or in another kernel), one variant per parent that passes it in a public case
  (`passed_by_a_parent` watches them all once, in forked tensor-parallel ranks too), and at least
  one of the public cases in which that parent passes it must fail. This is what catches a block
  that builds its norm without the layer's eps, or calls its attention without the cache. A method
  no parent builds or calls in any public case (`root`, read from the same watch run: a language
  model, which only adapters and generation build) has no way down, and its arguments' tests skip;
- every argument of every kernel is also dropped at every call (the kernel ignores it).

A dropped argument becomes its default; `**kwargs` become none; a required argument takes
another value of its type the public cases give an argument of that name (the adapter's own
cases first), or, where none does, the value it had at its first call in the run, as if
hard-coded (see `Dropped`). A case fails as its public snapshot test does: it raises, or its output is outside the fixture's stored tolerance
(`cs336_basics.testing.compare`). Arguments whose dropping changes no public case's output are in
EXCUSED, the one table, with the reason, or (CaughtBy) the public test of tests/ that catches the
variant instead, which the excuse tests run. An entry whose variant now fails a public case, that
names no argument, or whose named test no longer catches it fails, so the table cannot go stale.
"""

import ast
import atexit
import contextlib
import functools
import inspect
import itertools
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from cs336_basics.fixture_io import load_fixture
from cs336_basics.nn import functional as F
from cs336_basics.nn import modules, parallel
from cs336_basics.nn.parallel.launch import START_METHOD_ENV
from cs336_basics.staff.cases import PUBLIC_CASES
from cs336_basics.testing import compare

from .. import adapters, test_module_dtypes

pytestmark = pytest.mark.slow  # second tier: ~330 variants, each re-running public cases (~30 s of CPU)
# Test ids are numbered (the messages name the argument): an adapter's or module's name holds
# components' names (run_column_parallel_linear), which `-k` must not select.

FIXTURES = {c.name: load_fixture(c.name) for c in PUBLIC_CASES}
TORCH_MODULE_FILE = inspect.getfile(nn.Module)
# The name -> constructor tables: a module built through an entry is built by the entry's caller
# (past the entry's frame and the run-time type checker's wrappers around it).
REGISTRY_FILE = inspect.getfile(modules.registry)
TYPE_CHECKERS = ("jaxtyping.", "beartype.")
FUNCTIONAL_FILE = inspect.getfile(F)

# Why dropping an argument cannot change a public case's output, one reason per kind.
CPU = "every case runs on the CPU, the default device: None and the inputs' device are one device"
ROOT = "no parent module builds or calls it with this argument: only adapters and generation do"
SAME_BY_DESIGN = (
    "a correct implementation gives the same output either way: the argument is there to tell a wrong one "
    "apart (the mistake catalogue's)"
)
SCENARIO = "a scenario's output is 1 per check that holds: all 1 on any valid input for a correct component"
NO_PUBLIC_CASE = (
    "a scenario adapter only hidden cases call: its output (1 per check that holds; train_bpe's ids in the "
    "convention's order, 0, 1, 2, ...) is the same on any valid input for a correct component"
)
TABLE_LENGTH = (
    "only the length of RoPE's precomputed table (a model's context_length: and the longest input it takes): any "
    "length that covers the positions gives one output"
)
SHIFTED = (
    "a left-padded sequence's own positions differ from those after the cache by one shift per row, which RoPE's "
    "scores ignore (they depend on offsets only); lm_eps_positions_padding's out-of-order positions catch a drop"
)
WORLD_SIZE = "a correct tensor-parallel layer gives one output, within the case's tolerance, at every world size"
DEFAULT_GROUP = "None means the default process group, the one each public case's ranks run in: its size and rank"
WEIGHTS_ONLY = "ParallelAttention computes with its projections' weights through the attention kernel, never calls them"
NO_PARALLEL_CACHE = (
    "no public case runs the split model with a key/value cache (tests/staff/test_parallel_transformer.py generates "
    "with one); the cache is TransformerBlock's and MultiHeadSelfAttention's, checked there"
)
VALIDATION = "the module looks the name up only to reject an unknown one at construction; its kernel looks it up again"
NORM_DTYPE = (
    "the norm computes in float32 either way, and a bfloat16 gain rounds the float32 one within the case's tolerance"
)
DEFAULT_PASSED = "the caller passes the argument's default value: dropping it changes nothing"
COUNTS = "how many collectives a rank issues does not depend on the gradient's values, only on its shape"


@dataclass(frozen=True)
class CaughtBy:
    """An argument no fixture's output can show, whose dropping a public test of tests/ catches
    (the excuse test checks that it still does)."""

    reason: str
    test: Callable


DTYPE_CHECKED = CaughtBy(
    "the cases' weights are drawn in float32, which a float32 parameter holds exactly, and the norm computes in "
    "float32 (float64 for float64 input) either way; test_module_dtypes checks every parameter's dtype",
    test_module_dtypes.test_module_parameters_take_the_given_dtype_and_device,
)
DEVICE_CHECKED = CaughtBy(CPU + "; test_module_dtypes builds every module on the meta device", DTYPE_CHECKED.test)
# An init-check adapter (run_<module>_init_checks) builds the module from its arguments and scores
# each check of its starting values: all 1 for a correct module of any valid size, whichever it is.
INIT_CHECKS = {
    f"{name}-{a}": SCENARIO
    for name, f in inspect.getmembers(adapters, inspect.isfunction)
    if name.endswith("_init_checks")
    for a in inspect.signature(f).parameters
}
# One table: the adapter arguments ("run_x-arg"), module arguments no parent passes ("Class.method-arg") and
# module arguments from one parent ("Parent>Class.method-arg") whose dropping changes no public case.
EXCUSED = {
    "run_get_batch-device": CPU,
    "run_parallel_swiglu_collectives-grad_output": COUNTS,
    **{f"run_get_batch_checks-{a}": SCENARIO for a in ("batch_size", "context_length", "num_batches", "seed")},
    **{
        f"run_get_batch_generator_checks-{a}": NO_PUBLIC_CASE
        for a in ("dataset", "batch_size", "context_length", "num_batches", "seed")
    },
    **{f"run_checkpoint_checks-{a}": NO_PUBLIC_CASE for a in ("weights", "scale", "steps")},
    **INIT_CHECKS,
    **{
        f"run_tokenizer_encode_iterable_lazily-{a}": NO_PUBLIC_CASE
        for a in ("token_bytes", "token_offsets", "merges", "special_tokens", "text")
    },
    **{f"run_train_bpe_token_ids-{a}": NO_PUBLIC_CASE for a in ("corpus", "vocab_size", "special_tokens")},
    "run_train_bpe-kwargs": "CS336's pass-through for options of one's own train_bpe; no caller passes any",
    "run_tokenizer_decode-special_tokens": "decoding reads the vocabulary, which already holds the special tokens",
    "run_adamw_steps-resume_after": SAME_BY_DESIGN,
    "run_checkpoint_resume-to": SAME_BY_DESIGN,
    "run_gradient_clipping_of-params_without_grad": SAME_BY_DESIGN,
    "run_gradient_clipping_of-one_pass": SAME_BY_DESIGN,
    "run_column_parallel_linear-gather_output": "run_sharded assembles the whole output from the ranks either way",
    "run_column_parallel_linear-world_size": WORLD_SIZE,
    "run_row_parallel_linear-world_size": WORLD_SIZE,
    "run_parallel_swiglu-world_size": WORLD_SIZE,
    "run_rope-max_seq_len": TABLE_LENGTH,
    "run_multihead_self_attention_cached-max_seq_len": TABLE_LENGTH,
    "run_transformer_block_ablation-max_seq_len": TABLE_LENGTH,
    "run_transformer_lm_ablation-context_length": TABLE_LENGTH,
    "run_transformer_lm_cached-context_length": TABLE_LENGTH,
    "run_multihead_self_attention_cached-prefill_length": SAME_BY_DESIGN,
    "run_transformer_lm_cached-prefill_length": SAME_BY_DESIGN,
    "run_multihead_self_attention_cached-step_length": SAME_BY_DESIGN,
    "run_generate-use_cache": SAME_BY_DESIGN,
    "run_column_parallel_linear_backward-world_size": WORLD_SIZE,
    "run_transformer_lm_cached-token_positions": SHIFTED,
    "run_row_parallel_linear_backward-world_size": WORLD_SIZE,
    "run_parallel_swiglu_backward-world_size": WORLD_SIZE,
    "run_parallel_attention_backward-world_size": WORLD_SIZE,
    "run_parallel_attention_backward-max_seq_len": TABLE_LENGTH,
    # module arguments no parent passes to a method parents call (a method no parent calls is a root: root())
    "TransformerBlock.__init__-norm_type": "no public case builds norms other than RMSNorms, the default (a language "
    "model passes norm_type only for another kind; tests/staff/test_module_tables.py builds the others)",
    "TransformerBlock.__init__-max_seq_len": ROOT + " (a language model passes its shared rope)",
    "TransformerBlock.__init__-theta": ROOT + " (a language model passes its shared rope)",
    "ParallelSwiGLUFFN.__init__-activation": ROOT + " (the parallel block's FFN gates with SiLU, its default)",
    "run_parallel_attention-world_size": WORLD_SIZE,
    "run_parallel_transformer_lm-world_size": WORLD_SIZE,
    # the split layers, from each parent
    **{
        f"{by}>{cls}.__init__-{a}": DEFAULT_GROUP
        for by, cls in (
            ("ParallelSwiGLUFFN", "ColumnParallelLinear"),
            ("ParallelSwiGLUFFN", "RowParallelLinear"),
            ("ParallelAttention", "ColumnParallelLinear"),
            ("ParallelAttention", "RowParallelLinear"),
            ("ParallelTransformerBlock", "ParallelAttention"),
            ("ParallelTransformerBlock", "ParallelSwiGLUFFN"),
            ("ParallelTransformerLM", "ParallelTransformerBlock"),
        )
        for a in ("group", "world_size", "rank")
    },
    "ParallelAttention>ColumnParallelLinear.__init__-gather_output": WEIGHTS_ONLY,
    "ParallelAttention>RowParallelLinear.__init__-input_is_parallel": WEIGHTS_ONLY,
    "ParallelTransformerBlock>ParallelAttention.forward-kv_cache": NO_PARALLEL_CACHE,
    "ParallelTransformerLM>ParallelTransformerBlock.forward-kv_cache": NO_PARALLEL_CACHE,
    "ParallelAttention>F.multihead_self_attention-kv_cache": NO_PARALLEL_CACHE,
    # kernels
    "SwiGLUFFN>F.get_activation-name": VALIDATION,
    "PositionWiseFFN>F.get_activation-name": VALIDATION,
    "F.relu-x": "reached only through get_activation's table, which holds the function itself (the ReLU cases of "
    "positionwise_ffn run it)",
    "F.rmsnorm-cast_before_gain": "only the SmolLM2 model's norm passes it (Meta's cast order; tests/test_smollm2.py)",
    "F.scaled_dot_product_attention>F.softmax-dim": DEFAULT_PASSED,
    "F.causal_mask-device": CPU,
    "F.multihead_self_attention>F.causal_mask-device": CPU,
    "F.rope_cos_sin-device": CPU,
    "RotaryPositionalEmbedding>F.rope_cos_sin-device": CPU,
    # device from each parent
    **{
        f"{by}>{cls}.__init__-device": DEVICE_CHECKED
        for by, cls in (
            ("TransformerLM", "Embedding"),
            ("TransformerLM", "RMSNorm"),
            ("TransformerLM", "Linear"),
            ("TransformerLM", "TransformerBlock"),
            ("TransformerLM", "RotaryPositionalEmbedding"),
            ("TransformerBlock", "RMSNorm"),
            ("TransformerBlock", "MultiHeadSelfAttention"),
            ("TransformerBlock", "SwiGLUFFN"),
            ("TransformerBlock", "RotaryPositionalEmbedding"),
            ("FFNBlock", "RMSNorm"),
            ("FFNBlock", "LayerNorm"),
            ("FFNBlock", "SwiGLUFFN"),
            ("FFNBlock", "PositionWiseFFN"),
            ("TransformerBlock", "PositionWiseFFN"),
            ("MultiHeadSelfAttention", "Linear"),
            ("SwiGLUFFN", "Linear"),
            ("PositionWiseFFN", "Linear"),
        )
    },
    **{
        f"{by}>{cls}.__init__-device": CPU
        for by, cls in (
            ("ParallelTransformerLM", "Embedding"),
            ("ParallelTransformerLM", "RMSNorm"),
            ("ParallelTransformerLM", "Linear"),
            ("ParallelTransformerLM", "RotaryPositionalEmbedding"),
            ("ParallelTransformerLM", "ParallelTransformerBlock"),
            ("ParallelTransformerBlock", "RMSNorm"),
            ("ParallelTransformerBlock", "ParallelAttention"),
            ("ParallelTransformerBlock", "ParallelSwiGLUFFN"),
            ("ParallelSwiGLUFFN", "ColumnParallelLinear"),
            ("ParallelSwiGLUFFN", "RowParallelLinear"),
            ("ParallelAttention", "ColumnParallelLinear"),
            ("ParallelAttention", "RowParallelLinear"),
        )
    },
    **{f"{by}>RMSNorm.__init__-dtype": NORM_DTYPE for by in ("ParallelTransformerLM", "ParallelTransformerBlock")},
    **{f"{by}>RMSNorm.__init__-dtype": DTYPE_CHECKED for by in ("TransformerLM", "TransformerBlock", "FFNBlock")},
    "FFNBlock>LayerNorm.__init__-dtype": DTYPE_CHECKED,
    "TransformerBlock>SwiGLUFFN.__init__-activation": "a block's SwiGLU always gates with SiLU (BLOCK_FFNS): no setting "
    "gives another activation",
}


def same(a, b) -> bool:
    """Whether two argument values are one value (tensors: same shape, dtype and elements)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


FIRST_VALUES = Path(tempfile.mkdtemp(prefix="cs336_argument_flow_"))
atexit.register(shutil.rmtree, FIRST_VALUES, ignore_errors=True)


class Dropped:
    """What a dropped argument becomes: its default; for `**kwargs`, none; for a required
    argument, another value of its type the public cases give an argument of that name (the
    adapter's own cases first; for a module or kernel, the values of that name its callers pass),
    or, where none does, the value it had at its first call in this run, as if hard-coded (kept in
    a file: a forked tensor-parallel rank's memory is its own)."""

    def __init__(self, parameter: inspect.Parameter, others: list = ()):
        self.parameter, self.others = parameter, list(others)
        self.first, self.seen = None, False
        self.path = FIRST_VALUES / f"{id(self)}-{os.getpid()}.pt"

    def _first_of_the_run(self, value):
        """The value the first call in any process of the run saw (the first to write it wins)."""
        if not self.path.exists():
            mine = self.path.with_suffix(f".{os.getpid()}")
            torch.save(value, mine)
            with contextlib.suppress(FileExistsError):
                os.link(mine, self.path)
            mine.unlink()
        return torch.load(self.path, weights_only=False)

    def __call__(self, value):
        if self.parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return {}
        if self.parameter.default is not inspect.Parameter.empty:
            return self.parameter.default
        other = next((o for o in self.others if type(o) is type(value) and not same(o, value)), None)
        if other is not None:
            return other
        if not self.seen:
            self.first, self.seen = self._first_of_the_run(value), True
        return self.first


def dropping(function, name: str, when=None, others: list = ()):
    """`function` with argument `name` dropped (Dropped) in every call where `when(bound
    arguments, caller's frame)` holds (always if None)."""
    signature = inspect.signature(function)
    drop = Dropped(signature.parameters[name], others)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if name in bound.arguments and (when is None or when(bound.arguments, sys._getframe(1))):
            bound.arguments[name] = drop(bound.arguments[name])
        return function(*bound.args, **bound.kwargs)

    return wrapper


def parent(arguments: dict, frame) -> str | None:
    """Who builds or calls this module or kernel, from the first caller outside torch.nn.Module's call
    machinery and the registry's tables: the class name of another module, from one of its methods;
    "F.<name>" for another kernel; None when an adapter, generation or the module itself (super()) is
    the caller."""
    while frame is not None and (
        frame.f_code.co_filename in (TORCH_MODULE_FILE, REGISTRY_FILE)
        or frame.f_globals.get("__name__", "").startswith(TYPE_CHECKERS)
    ):
        frame = frame.f_back
    if frame is None:
        return None
    caller = frame.f_locals.get("self")
    if isinstance(caller, nn.Module) and caller is not arguments.get("self"):
        return type(caller).__name__
    if frame.f_code.co_filename == FUNCTIONAL_FILE and "self" not in arguments:
        return f"F.{frame.f_code.co_name}"
    return None


def fails(case: str) -> bool:
    """Whether the public snapshot test of `case` fails: it raises, or the output is off."""
    fx = FIXTURES[case]
    try:
        with torch.no_grad():
            actual = getattr(adapters, fx.adapter)(**fx.kwargs)
    except Exception:  # noqa: BLE001 -- a case that raises is a failed public test
        return True
    return not compare(actual, fx.expected, fx.tol, out_dtype=fx.out_dtype).ok


@contextlib.contextmanager
def applied(patches: list[tuple[object, str, object]]):
    """Inside the block, each (owner, attribute, value) of `patches` is set."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(START_METHOD_ENV, "fork")  # tensor-parallel ranks inherit the patch
        for owner, attribute, value in patches:
            mp.setattr(owner, attribute, value)
        yield


def first_failure(cases, patches: list[tuple[object, str, object]], everyone: bool = False) -> list[str]:
    """The cases (the first one, or with `everyone` all) that fail with `patches` applied."""
    failed = []
    with applied(patches):
        for case in cases:
            if fails(case):
                failed.append(case)
                if not everyone:
                    break
    return failed


def public_test_fails(test: Callable, patches: list[tuple[object, str, object]]) -> bool:
    """Whether a test function of tests/ fails, in any of its parametrizations, with `patches` applied."""
    grids = []
    for mark in (m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"):
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        grids.append([dict(zip(names, v if len(names) > 1 else (v,), strict=True)) for v in mark.args[1]])
    with applied(patches):
        for combination in itertools.product(*grids):
            try:
                test(**{k: v for part in combination for k, v in part.items()})
            except (Exception, pytest.fail.Exception):  # noqa: BLE001 -- any failure of the test
                return True
    return False


# Adapters: every parameter of every run_*/get_* function, on the public cases that reach it.


def adapter_functions() -> dict[str, object]:
    return {
        name: f
        for name, f in inspect.getmembers(adapters, inspect.isfunction)
        if name.startswith(("run_", "get_")) and f.__module__ == adapters.__name__
    }


@functools.cache
def callees() -> dict[str, set[str]]:
    """{adapter: the adapters.py functions its body names}, from the source."""
    tree = ast.parse(Path(adapters.__file__).read_text())
    return {
        node.name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def cases_reaching(adapter: str) -> list[str]:
    """The public cases whose adapter is `adapter` or calls it (through any chain of functions)."""
    calls = callees()

    def reaches(start: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name == adapter:
                return True
            if name not in seen:
                seen.add(name)
                todo.extend(calls.get(name, ()))
        return False

    return [case for case, fx in FIXTURES.items() if reaches(fx.adapter)]


ADAPTER_ARGUMENTS = [
    (adapter, name) for adapter, f in adapter_functions().items() for name in inspect.signature(f).parameters
]


def adapter_id(adapter: str, name: str) -> str:
    return f"{adapter}-{name}"


def adapter_patches(adapter: str, name: str) -> list[tuple[object, str, object]]:
    given = sorted((fx.adapter != adapter, case) for case, fx in FIXTURES.items() if name in fx.kwargs)
    others = [FIXTURES[case].kwargs[name] for _, case in given]  # this adapter's cases first
    return [(adapters, adapter, dropping(getattr(adapters, adapter), name, others=others))]


def adapter_variant_failures(adapter: str, name: str, everyone: bool = False) -> list[str]:
    return first_failure(cases_reaching(adapter), adapter_patches(adapter, name), everyone)


@pytest.mark.parametrize(
    ("adapter", "name"),
    [a for a in ADAPTER_ARGUMENTS if adapter_id(*a) not in EXCUSED],
    ids=[f"adapter_argument{i}" for i, a in enumerate(a for a in ADAPTER_ARGUMENTS if adapter_id(*a) not in EXCUSED)],
)
def test_argument_flow_adapter_without_the_argument_fails_a_public_case(adapter, name):
    assert cases_reaching(adapter), f"no public case reaches {adapter}"
    assert adapter_variant_failures(adapter, name), f"{adapter} passes every public case without {name!r}"


# Modules and kernels: every __init__ and forward argument of the classes of cs336_basics.nn.modules
# and nn.parallel, and every argument of nn.functional's kernels (the owner F), dropped while one
# parent (a module, or another kernel) builds or calls it: one variant per parent that passes it.
# A kernel's argument is also dropped at every call, the parent "" (the kernel ignores it).


def classes_of(package) -> list[type]:
    found = (getattr(package, name) for name in package.__all__)
    return [c for c in found if isinstance(c, type) and issubclass(c, nn.Module)]


MODULE_CLASSES = classes_of(modules) + classes_of(parallel)
METHODS = ("__init__", "forward")
KERNELS = [
    n for n, f in inspect.getmembers(F, inspect.isfunction) if not n.startswith("_") and f.__module__ == F.__name__
]
CALLABLES = [(cls, method) for cls in MODULE_CLASSES for method in METHODS] + [(F, kernel) for kernel in KERNELS]
MODULE_ARGUMENTS = [
    (owner, method, name)
    for owner, method in CALLABLES
    for name in inspect.signature(getattr(owner, method)).parameters
    if name != "self"
]


def module_id(owner, method: str, name: str) -> str:
    return f"{'F' if owner is F else owner.__name__}.{method}-{name}"


@functools.cache
def passed_by_a_parent() -> dict[str, dict[str, list[str]]]:
    """{module argument id: {parent: the public cases in which it passes the argument}}, recorded by
    running every public case with every class's methods and every kernel watched (all must pass)."""
    return _watch_run()[0]


def root(cls, method: str) -> bool:
    """Whether no parent builds or calls cls.method in any public case: a parent passes none of its
    arguments. A method without a required argument is never one (a parent may pass it none)."""
    parameters = [p for name, p in inspect.signature(getattr(cls, method)).parameters.items() if name != "self"]
    required = any(p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)
    passed = passed_by_a_parent()
    return required and not any(module_id(cls, method, p.name) in passed for p in parameters)


def values_passed(name: str) -> list:
    """The plain values (numbers, strings) any parent passes an argument called `name`, sorted."""
    return sorted(_watch_run()[1].get(name, ()), key=repr)


@functools.cache
def _watch_run() -> tuple[dict, dict]:
    """(passed_by_a_parent's table, {argument name: the plain values passed under it})."""
    passed, values = defaultdict(lambda: defaultdict(set)), defaultdict(set)
    with tempfile.TemporaryFile("w+") as ranks_log:  # what forked tensor-parallel ranks saw
        seen = functools.partial(_seen, os.getpid(), passed, values, ranks_log)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(START_METHOD_ENV, "fork")
            for owner, method in CALLABLES:
                mp.setattr(owner, method, _watched(owner, method, seen))
            for case in FIXTURES:
                seen.keywords["case"] = case
                assert not fails(case), f"{case} fails with the watchers alone"
                _read_ranks_log(ranks_log, passed, values)
    table = {key: {by: sorted(cases) for by, cases in parents.items()} for key, parents in passed.items()}
    return table, dict(values)


def _watched(owner, method: str, seen: Callable):
    """owner.method, reporting each argument it is passed, by whom, and its value, to `seen`."""
    function, signature = getattr(owner, method), inspect.signature(getattr(owner, method))

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        by = parent(bound.arguments, sys._getframe(1))
        parents = ([by] if by else []) + ([""] if owner is F else [])  # "": any caller, the kernel ignoring it
        for name, value in bound.arguments.items():
            if name != "self" and parents:
                seen(module_id(owner, method, name), parents, name, value)
        return function(*args, **kwargs)

    return wrapper


def _seen(pid: int, passed: dict, values: dict, ranks_log, key: str, parents: list, name: str, value, case: str = ""):
    plain = type(value) in (int, float, str, bool)
    if os.getpid() == pid:
        for by in parents:
            passed[key][by].add(case)
        if plain:
            values[name].add(value)
    else:  # a forked rank: its memory is its own
        ranks_log.writelines(f"P\t{key}\t{by}\t{case}\n" for by in parents)
        ranks_log.write(f"V\t{name}\t{value!r}\n" if plain else "")
        ranks_log.flush()


def _read_ranks_log(ranks_log, passed: dict, values: dict) -> None:
    ranks_log.seek(0)
    for kind, *fields in (line.split("\t") for line in ranks_log.read().splitlines()):
        if kind == "P":
            passed[fields[0]][fields[1]].add(fields[2])
        else:
            values[fields[0]].add(ast.literal_eval(fields[1]))
    ranks_log.seek(0)
    ranks_log.truncate()


def flow_id(by: str, cls, method: str, name: str) -> str:
    return f"{by}>{module_id(cls, method, name)}" if by else module_id(cls, method, name)


def module_patches(by: str, cls, method: str, name: str) -> list[tuple[object, str, object]]:
    """cls.method without `name` whenever a `by` module builds or calls it (by "": at every call)."""
    when = (lambda arguments, frame: parent(arguments, frame) == by) if by else None
    return [(cls, method, dropping(getattr(cls, method), name, when=when, others=values_passed(name)))]


def module_cases(by: str, cls, method: str, name: str) -> list[str]:
    return passed_by_a_parent().get(module_id(cls, method, name), {}).get(by, [])


def module_variant_failures(by: str, cls, method: str, name: str, everyone: bool = False) -> list[str]:
    """The public cases that fail when `name` does not reach cls.method from a `by` parent."""
    return first_failure(module_cases(by, cls, method, name), module_patches(by, cls, method, name), everyone)


CLASS_ARGUMENTS = [a for a in MODULE_ARGUMENTS if a[0] is not F and module_id(*a) not in EXCUSED]
KERNEL_ARGUMENTS = [a for a in MODULE_ARGUMENTS if a[0] is F and module_id(*a) not in EXCUSED]


@pytest.mark.parametrize(
    ("cls", "method", "name"), CLASS_ARGUMENTS, ids=[f"module_argument{i}" for i in range(len(CLASS_ARGUMENTS))]
)
def test_argument_flow_module_built_or_called_by_a_parent_without_the_argument_fails_a_public_case(cls, method, name):
    if root(cls, method):
        pytest.skip(f"{cls.__name__}.{method}: {ROOT}")
    parents = passed_by_a_parent().get(module_id(cls, method, name))
    assert parents, f"no parent module passes {name!r} to {cls.__name__}.{method} in a public case"
    survivors = [
        flow_id(by, cls, method, name)
        for by in parents
        if flow_id(by, cls, method, name) not in EXCUSED and not module_variant_failures(by, cls, method, name)
    ]
    assert survivors == [], f"every public case passes when the argument does not reach the module: {survivors}"


@pytest.mark.parametrize(
    ("kernel", "method", "name"), KERNEL_ARGUMENTS, ids=[f"kernel_argument{i}" for i in range(len(KERNEL_ARGUMENTS))]
)
def test_argument_flow_kernel_ignoring_the_argument_or_not_given_it_fails_a_public_case(kernel, method, name):
    callers = passed_by_a_parent().get(module_id(kernel, method, name))
    assert callers, f"no public case calls F.{method} with {name!r}"
    survivors = [
        flow_id(by, kernel, method, name)
        for by in callers
        if flow_id(by, kernel, method, name) not in EXCUSED and not module_variant_failures(by, kernel, method, name)
    ]
    assert survivors == [], (
        f"every public case passes when the kernel ignores the argument or is not given it: {survivors}"
    )


# The table of excuses cannot go stale.


def variants(entry: str) -> list[tuple[list[str], list]] | None:
    """(public cases, patches) of each variant an EXCUSED entry names, or None if it names none."""
    adapter_arguments = {adapter_id(*a): a for a in ADAPTER_ARGUMENTS}
    module_arguments = {module_id(*a): a for a in MODULE_ARGUMENTS}
    if entry in adapter_arguments:
        return [(cases_reaching(adapter_arguments[entry][0]), adapter_patches(*adapter_arguments[entry]))]
    by, _, argument = entry.rpartition(">")
    parents = passed_by_a_parent().get(argument, {})
    if argument not in module_arguments or (by and by not in parents):
        return None
    owner, method, name = module_arguments[argument]
    # no parent named: a kernel's own ("" : it ignores the argument), or every parent's of a class
    chosen = [by] if by else ([""] if owner is F else parents)
    return [(module_cases(p, owner, method, name), module_patches(p, owner, method, name)) for p in chosen]


@pytest.mark.parametrize("entry", sorted(EXCUSED), ids=[f"excuse{i}" for i in range(len(EXCUSED))])
def test_argument_flow_excused_argument_exists_and_still_changes_no_public_case(entry):
    found = variants(entry)
    assert found is not None, f"{entry} names no adapter argument, module argument or parent that passes one"
    failed = [case for cases, patches in found for case in first_failure(cases, patches, everyone=True)]
    assert failed == [], f"{entry} is excused but its variant now fails these public cases"


@pytest.mark.parametrize(
    "entry",
    CAUGHT_ELSEWHERE := sorted(e for e, why in EXCUSED.items() if isinstance(why, CaughtBy)),
    ids=[f"caught_elsewhere{i}" for i in range(len(CAUGHT_ELSEWHERE))],
)
def test_argument_flow_excused_argument_is_caught_by_the_public_test_its_excuse_names(entry):
    test = EXCUSED[entry].test
    assert all(public_test_fails(test, patches) for _, patches in variants(entry)), f"{test.__name__} passes"


def test_argument_flow_watching_the_modules_changes_no_case():
    assert passed_by_a_parent(), "no parent module passed any argument: the watchers saw nothing"
