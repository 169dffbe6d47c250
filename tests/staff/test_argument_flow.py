"""Argument flow: every input a component is given can change its output in a public case.

The variants are generated from the code, not listed by hand:

- every parameter of every adapter (tests/adapters.py: the `run_*` and `get_*` functions) is
  *dropped*: the adapter runs with that argument replaced (see `Dropped`), and at least one public
  case that reaches the adapter (its fixture's adapter, or one that calls it) must fail;
- every argument of every module class's `__init__` and `forward` (cs336_basics.nn.modules) is
  dropped *on its way down*: replaced only while a parent module builds or calls the class
  (`called_by_a_parent`: the code that calls it runs in another module's method), and at least
  one public case of a component in which a parent passes it must fail. This is what catches a
  block that builds its norm without the layer's eps, or calls its attention without the cache.

A dropped argument becomes its default; `**kwargs` become none; a required argument keeps the
value it had at its first call in the run, as if the code had hard-coded it. A case fails as the
public snapshot test does: a raised exception, or an output outside the fixture's stored
tolerance (`cs336_basics.testing.compare`). Arguments whose dropping cannot change an output are
in EXCUSED, the one table, with the reason; an entry whose variant now fails a case, or that
names no argument, fails the last test, so the table cannot go stale.
"""

import ast
import functools
import inspect
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import torch
from torch import nn

from cs336_basics.fixture_io import load_fixture
from cs336_basics.nn import modules
from cs336_basics.nn.parallel.launch import START_METHOD_ENV
from cs336_basics.staff.cases import PUBLIC_CASES
from cs336_basics.testing import compare

from .. import adapters

pytestmark = pytest.mark.slow  # second tier: ~400 variants, each re-running public cases (about a minute of CPU)

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
NO_PUBLIC_CASE = "the adapter has hidden cases only; its public tests (tests/test_*.py) call it directly"
TABLE_LENGTH = "only the length of RoPE's precomputed table: any length that covers the positions gives one output"
WORLD_SIZE = "a correct tensor-parallel layer gives one output, within the case's tolerance, at every world size"
F32_WEIGHTS = (
    "SURVIVOR: the norm computes in float32 (or the input's float64) and the cases' weights are drawn in float32, "
    "so float32 weights hold them exactly; a kill needs float64 weights beyond float32's precision"
)
GAP = "SURVIVOR: no public case passes a value other than the default (the next commit adds cases)"
ABLATION = "SURVIVOR: an ablation setting (CS336 section 7.3) that no adapter exposes; the language model's defaults"
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
    "run_multihead_self_attention_with_rope-max_seq_len": TABLE_LENGTH,
    "run_transformer_block-max_seq_len": TABLE_LENGTH,
    "run_transformer_lm-context_length": TABLE_LENGTH + " (and the longest input, which every case's fits)",
    "TransformerLM>RotaryPositionalEmbedding.__init__-max_seq_len": TABLE_LENGTH,
    "TransformerBlock>RotaryPositionalEmbedding.__init__-max_seq_len": TABLE_LENGTH,
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
        f"{by}>{cls}.__init__-device": CPU
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
            ("MultiHeadSelfAttention", "Linear"),
            ("SwiGLUFFN", "Linear"),
            ("PositionWiseFFN", "Linear"),
        )
    },
    **{f"{by}>RMSNorm.__init__-dtype": F32_WEIGHTS for by in ("TransformerLM", "TransformerBlock", "FFNBlock")},
    "FFNBlock>LayerNorm.__init__-dtype": F32_WEIGHTS,
    "TransformerLM>TransformerBlock.__init__-norm": ABLATION,
    "TransformerLM>TransformerBlock.__init__-ffn": ABLATION,
    "TransformerBlock>SwiGLUFFN.__init__-activation": "a block's SwiGLU always gates with SiLU (BLOCK_FFNS): no setting "
    "gives another activation",
    # survivors the public cases do not kill yet
    "run_generate-temperature": GAP,
    "run_generate-seed": GAP,
    "FFNBlock>SwiGLUFFN.__init__-activation": GAP,
    "FFNBlock>RMSNorm.__init__-eps": GAP,
    "TransformerBlock>RMSNorm.__init__-eps": GAP,
    "TransformerLM>RMSNorm.__init__-eps": GAP,
    "FFNBlock>LayerNorm.__init__-bias": GAP,
    "FFNBlock>PositionWiseFFN.__init__-bias": GAP,
    "TransformerBlock>MultiHeadSelfAttention.forward-token_positions": GAP,
    "TransformerBlock>MultiHeadSelfAttention.forward-attention_mask": GAP,
    "TransformerBlock>RotaryPositionalEmbedding.__init__-d_k": GAP,
    "TransformerLM>TransformerBlock.__init__-eps": GAP,
    "TransformerLM>TransformerBlock.forward-token_positions": GAP,
    "TransformerLM>TransformerBlock.forward-attention_mask": GAP,
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
    argument, another value the public cases give an argument of that name (the first that
    differs), or, where none does (an adapter only other adapters call, a module's argument),
    the value it had at its first call in this run, as if hard-coded."""

    def __init__(self, parameter: inspect.Parameter, others: list = ()):
        self.parameter, self.others = parameter, list(others)
        self.first, self.seen = None, False

    def __call__(self, value):
        if self.parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return {}
        if self.parameter.default is not inspect.Parameter.empty:
            return self.parameter.default
        other = next((o for o in self.others if not same(o, value)), None)
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


def first_failure(cases, patches: list[tuple[object, str, object]], everyone: bool = False) -> list[str]:
    """The cases (the first one, or with `everyone` all) that fail with `patches` applied."""
    failed = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(START_METHOD_ENV, "fork")  # tensor-parallel ranks inherit the patch
        for owner, attribute, value in patches:
            mp.setattr(owner, attribute, value)
        for case in cases:
            if fails(case):
                failed.append(case)
                if not everyone:
                    break
    return failed


# Adapters: every parameter of every run_*/get_* function, on the public cases that reach it.


def adapter_functions() -> dict[str, object]:
    return {
        name: f
        for name, f in inspect.getmembers(adapters, inspect.isfunction)
        if name.startswith(("run_", "get_")) and f.__module__ == adapters.__name__
    }


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


def adapter_variant_failures(adapter: str, name: str, everyone: bool = False) -> list[str]:
    others = [fx.kwargs[name] for fx in FIXTURES.values() if name in fx.kwargs]
    wrong = dropping(getattr(adapters, adapter), name, others=others)
    return first_failure(cases_reaching(adapter), [(adapters, adapter, wrong)], everyone)


@pytest.mark.parametrize(
    ("adapter", "name"),
    [a for a in ADAPTER_ARGUMENTS if adapter_id(*a) not in EXCUSED],
    ids=[adapter_id(*a) for a in ADAPTER_ARGUMENTS if adapter_id(*a) not in EXCUSED],
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


def module_variant_failures(by: str, cls, method: str, name: str, everyone: bool = False) -> list[str]:
    """The public cases that fail when `name` does not reach cls.method from a `by` parent."""
    wrong = dropping(getattr(cls, method), name, when=lambda arguments, frame: parent(arguments, frame) == by)
    cases = passed_by_a_parent().get(module_id(cls, method, name), {}).get(by, [])
    return first_failure(cases, [(cls, method, wrong)], everyone)


@pytest.mark.parametrize(
    ("cls", "method", "name"),
    [a for a in MODULE_ARGUMENTS if module_id(*a) not in EXCUSED],
    ids=[module_id(*a) for a in MODULE_ARGUMENTS if module_id(*a) not in EXCUSED],
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


def variant(entry: str):
    """The failures function of an EXCUSED entry's variant, or None if it names no argument."""
    adapter_variants = {adapter_id(*a): functools.partial(adapter_variant_failures, *a) for a in ADAPTER_ARGUMENTS}
    module_variants = {module_id(*a): a for a in MODULE_ARGUMENTS}
    if entry in adapter_variants:
        return adapter_variants[entry]
    by, _, module_argument = entry.rpartition(">")
    if module_argument not in module_variants:
        return None
    if not by:  # no parent passes it: every parent's variant must still change nothing
        parents = passed_by_a_parent().get(module_argument, {})
        return lambda everyone: [f for p in parents for f in module_variant_failures(p, *module_variants[entry])]
    if by not in passed_by_a_parent().get(module_argument, {}):
        return None
    return functools.partial(module_variant_failures, by, *module_variants[module_argument])


@pytest.mark.parametrize("entry", sorted(EXCUSED))
def test_argument_flow_excused_argument_exists_and_still_changes_no_public_case(entry):
    failures = variant(entry)
    assert failures is not None, f"{entry} names no adapter argument, module argument or parent that passes one"
    assert failures(everyone=True) == [], f"{entry} is excused but its variant now fails these cases"


def test_argument_flow_watching_the_modules_changes_no_case():
    assert passed_by_a_parent(), "no parent module passed any argument: the watchers saw nothing"
