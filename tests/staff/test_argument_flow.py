"""Argument flow: every input a component is given can change its output in a public case.

The variants are generated from the code, not listed by hand:

- every parameter of every adapter (tests/adapters.py: the `run_*` and `get_*` functions) is
  *dropped*: the adapter runs with that argument replaced (see `Dropped`), and at least one public
  case that reaches the adapter (its fixture's adapter, or one that calls it) must fail;
- every argument of every module class's `__init__` and `forward` (cs336_basics.nn.modules) is
  dropped *on its way down*: replaced only while one parent class builds or calls the module
  (`parent`: the code that calls it runs in a method of another module), one variant per parent
  that passes it in a public case (`passed_by_a_parent` watches them all once), and at least one
  of the public cases in which that parent passes it must fail. This is what catches a block
  that builds its norm without the layer's eps, or calls its attention without the cache.

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
import contextlib
import functools
import inspect
import itertools
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from cs336_basics.fixture_io import load_fixture
from cs336_basics.nn import modules
from cs336_basics.nn.parallel.launch import START_METHOD_ENV
from cs336_basics.staff.cases import PUBLIC_CASES
from cs336_basics.testing import compare

from .. import adapters, test_module_dtypes

pytestmark = pytest.mark.slow  # second tier: ~330 variants, each re-running public cases (~30 s of CPU)
# Test ids are numbered (the messages name the argument): an adapter's or module's name holds
# components' names (run_column_parallel_linear), which `-k` must not select.

FIXTURES = {c.name: load_fixture(c.name) for c in PUBLIC_CASES}
TORCH_MODULE_FILE = inspect.getfile(nn.Module)

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
# One table: the adapter arguments ("run_x-arg"), module arguments no parent passes ("Class.method-arg") and
# module arguments from one parent ("Parent>Class.method-arg") whose dropping changes no public case.
EXCUSED = {
    "run_get_batch-device": CPU,
    "get_batch_checks-device": CPU,
    "get_batch_checks-reads_little": SCENARIO,
    **{f"run_get_batch_checks-{a}": SCENARIO for a in ("batch_size", "context_length", "num_batches", "seed")},
    **{
        f"run_get_batch_generator_checks-{a}": NO_PUBLIC_CASE
        for a in ("dataset", "batch_size", "context_length", "num_batches", "seed")
    },
    **{f"run_checkpoint_checks-{a}": NO_PUBLIC_CASE for a in ("weights", "scale", "steps")},
    **{f"run_linear_init_checks-{a}": SCENARIO for a in ("d_in", "d_out", "seed")},
    **{f"run_embedding_init_checks-{a}": SCENARIO for a in ("vocab_size", "d_model", "seed")},
    "run_rmsnorm_init_checks-d_model": SCENARIO,
    "run_layernorm_init_checks-d_model": SCENARIO,
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
    "run_transformer_lm_cached-token_positions": SHIFTED,
    "run_row_parallel_linear_backward-world_size": WORLD_SIZE,
    "run_parallel_swiglu_backward-world_size": WORLD_SIZE,
    "TransformerLM>RotaryPositionalEmbedding.__init__-max_seq_len": TABLE_LENGTH,
    # module arguments no parent passes
    "TransformerLM.__init__-config": ROOT,
    "TransformerLM.__init__-device": ROOT,
    "TransformerLM.__init__-dtype": ROOT,
    "TransformerLM.forward-in_indices": ROOT,
    "TransformerLM.forward-token_positions": ROOT,
    "TransformerLM.forward-kv_cache": ROOT,
    "TransformerLM.forward-attention_mask": ROOT,
    "FFNBlock.__init__-config": ROOT + " (TransformerBlock builds its own through super())",
    "FFNBlock.__init__-device": ROOT + " (TransformerBlock builds its own through super())",
    "FFNBlock.__init__-dtype": ROOT + " (TransformerBlock builds its own through super())",
    "FFNBlock.forward-x": ROOT + " (TransformerBlock calls its own through super())",
    "TransformerBlock.__init__-max_seq_len": ROOT + " (a language model passes its shared rope)",
    "TransformerBlock.__init__-theta": ROOT + " (a language model passes its shared rope)",
    "RotaryPositionalEmbedding.forward-x": ROOT + " (attention rotates with rope.tables())",
    "RotaryPositionalEmbedding.forward-token_positions": ROOT + " (attention rotates with rope.tables())",
    "Linear.forward-x": ROOT + " (parents compute with its weight through the kernels)",
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


class Dropped:
    """What a dropped argument becomes: its default; for `**kwargs`, none; for a required
    argument, another value of its type the public cases give an argument of that name (the
    adapter's own cases first), or, where none does (an adapter only other adapters call, a module's argument),
    the value it had at its first call in this run, as if hard-coded."""

    def __init__(self, parameter: inspect.Parameter, others: list = ()):
        self.parameter, self.others = parameter, list(others)
        self.first, self.seen = None, False

    def __call__(self, value):
        if self.parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return {}
        if self.parameter.default is not inspect.Parameter.empty:
            return self.parameter.default
        other = next((o for o in self.others if type(o) is type(value) and not same(o, value)), None)
        if other is not None:
            return other
        if not self.seen:
            self.first, self.seen = value, True
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
    """The class name of the module that builds or calls this one (`arguments["self"]`) from one of
    its methods: the first caller outside torch.nn.Module's call machinery, if its `self` is another
    module; None when an adapter, generation or the module itself (super()) is the caller."""
    while frame is not None and frame.f_code.co_filename == TORCH_MODULE_FILE:
        frame = frame.f_back
    caller = frame.f_locals.get("self") if frame is not None else None
    if isinstance(caller, nn.Module) and caller is not arguments["self"]:
        return type(caller).__name__
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


# Modules: every __init__ and forward argument of cs336_basics.nn.modules' classes, dropped
# while one parent class builds or calls the class (one variant per parent that passes it).

MODULE_CLASSES = [c for c in map(modules.__dict__.get, modules.__all__) if issubclass(c, nn.Module)]
METHODS = ("__init__", "forward")
MODULE_ARGUMENTS = [
    (cls, method, name)
    for cls in MODULE_CLASSES
    for method in METHODS
    for name in inspect.signature(getattr(cls, method)).parameters
    if name != "self"
]


def module_id(cls, method: str, name: str) -> str:
    return f"{cls.__name__}.{method}-{name}"


@functools.cache
def passed_by_a_parent() -> dict[str, dict[str, list[str]]]:
    """{module argument id: {parent class: the public cases in which it passes the argument}},
    recorded by running every public case with every class's methods watched (all must pass)."""
    passed = defaultdict(lambda: defaultdict(set))
    current = {}

    def watch(cls, method):
        function, signature = getattr(cls, method), inspect.signature(getattr(cls, method))

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            by = parent(bound.arguments, sys._getframe(1))
            for name in bound.arguments.keys() - {"self"} if by else ():
                passed[module_id(cls, method, name)][by].add(current["case"])
            return function(*args, **kwargs)

        return wrapper

    with pytest.MonkeyPatch.context() as mp:
        for cls in MODULE_CLASSES:
            for method in METHODS:
                mp.setattr(cls, method, watch(cls, method))
        for case in FIXTURES:
            current["case"] = case
            assert not fails(case), f"{case} fails with the watchers alone"
    return {key: {by: sorted(cases) for by, cases in parents.items()} for key, parents in passed.items()}


def flow_id(by: str, cls, method: str, name: str) -> str:
    return f"{by}>{module_id(cls, method, name)}"


def module_patches(by: str, cls, method: str, name: str) -> list[tuple[object, str, object]]:
    """cls.method without `name` whenever a `by` module builds or calls it."""
    wrong = dropping(getattr(cls, method), name, when=lambda arguments, frame: parent(arguments, frame) == by)
    return [(cls, method, wrong)]


def module_cases(by: str, cls, method: str, name: str) -> list[str]:
    return passed_by_a_parent().get(module_id(cls, method, name), {}).get(by, [])


def module_variant_failures(by: str, cls, method: str, name: str, everyone: bool = False) -> list[str]:
    """The public cases that fail when `name` does not reach cls.method from a `by` parent."""
    return first_failure(module_cases(by, cls, method, name), module_patches(by, cls, method, name), everyone)


@pytest.mark.parametrize(
    ("cls", "method", "name"),
    [a for a in MODULE_ARGUMENTS if module_id(*a) not in EXCUSED],
    ids=[f"module_argument{i}" for i, a in enumerate(a for a in MODULE_ARGUMENTS if module_id(*a) not in EXCUSED)],
)
def test_argument_flow_module_built_or_called_by_a_parent_without_the_argument_fails_a_public_case(cls, method, name):
    parents = passed_by_a_parent().get(module_id(cls, method, name))
    assert parents, f"no parent module passes {name!r} to {cls.__name__}.{method} in a public case"
    survivors = [
        flow_id(by, cls, method, name)
        for by in parents
        if flow_id(by, cls, method, name) not in EXCUSED and not module_variant_failures(by, cls, method, name)
    ]
    assert survivors == [], f"every public case passes when the argument does not reach the module: {survivors}"


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
    return [
        (module_cases(p, *module_arguments[argument]), module_patches(p, *module_arguments[argument]))
        for p in ([by] if by else parents)  # no parent named: every parent's, if one ever passes it
    ]


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
