# ruff: noqa: E402 -- the cyclic collector is off while the modules below are imported
import atexit
import functools
import gc

gc.disable()  # until what the imports build is frozen, below

from pathlib import Path

import jaxtyping
import pytest
import torch
import tqdm

from cs336_basics import COMPONENTS, source_rule
from cs336_basics.builtin_guard import assert_no_builtins
from cs336_basics.fixture_io import FIXTURES_DIR, load_fixture
from cs336_basics.serial_pools import serial_pools
from cs336_basics.testing import compare, hints, likely_mistakes

from ._helpers import PACKAGE_DIR, raised, your_frame
from ._no_dynamo import skip_dynamo_in_optimizer_methods

# One thread, as the grader runs graded code: the tests' tensors are small, and a second thread
# of PyTorch's pool only spins (CPU time, on a shared machine) between them.
torch.set_num_threads(1)

# No progress bar started in a test starts tqdm's monitor thread: a second thread makes
# launch.default_start_method start tensor-parallel ranks with forkserver instead of fork, and a
# test's patches (the mistake catalogue's) would then not reach the ranks of tests that run later.
tqdm.tqdm.monitor_interval = 0

# Building or saving any torch.optim.Optimizer, a student's AdamW too, would import torch._dynamo.
skip_dynamo_in_optimizer_methods()

# What imports and collection build lives until the end: gc.freeze() takes it out of the cyclic
# collector's sight, so each full collection (pytest's at exit too) walks only what tests create.
# The collector was off while the imports ran: its passes over torch's objects as they were built
# cost about 0.1 s of CPU per run and found next to nothing (the few cycles the imports leave are
# frozen with the rest and freed at exit).
gc.freeze()
gc.enable()


class Snapshot:
    """Loads a stored fixture and checks an output against it with the tolerance stored in the
    fixture (see cs336_basics/testing.py). The hidden suite uses it with its own directory and
    reveal_values=False."""

    def __init__(self, record_property, directory=FIXTURES_DIR, reveal_values: bool = True):
        self._record = record_property
        self.directory = directory
        self.reveal_values = reveal_values

    def load(self, name: str):
        return load_fixture(name, self.directory)

    def check(self, actual, fixture) -> None:
        changed = _changed_inputs(fixture.kwargs, self.load(fixture.name).kwargs)
        if changed:  # the grader's rule too: it checks every input after the call
            pytest.fail(
                f"{fixture.adapter} on fixture {fixture.name!r} changed its input {', '.join(changed)} in "
                "place: kernels and modules must leave their inputs unchanged (compute into new tensors)",
                pytrace=False,
            )
        result = compare(
            actual, fixture.expected, fixture.tol, out_dtype=fixture.out_dtype, reveal_values=self.reveal_values
        )
        self._record("fixture", fixture.name)
        self._record("max_abs_err", result.max_abs_err)
        self._record("max_scaled_err", result.max_scaled_err)
        if not result.ok:
            hint = hints(likely_mistakes(actual, fixture))
            pytest.fail(f"{fixture.adapter} on fixture {fixture.name!r}: {result.message}{hint}", pytrace=False)


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """t's bits as uint8 (a 0-d tensor too): bit-equality of floats, NaNs included."""
    return t.contiguous().reshape(-1).view(torch.uint8)


def _changed_inputs(after: dict, before: dict, prefix: str = "") -> list[str]:
    """The names of the tensors in `after` that differ from `before` in shape, dtype or any bit."""
    changed = []
    for name, value in after.items():
        if isinstance(value, dict):
            changed += _changed_inputs(value, before[name], f"{prefix}{name}.")
        elif isinstance(value, torch.Tensor):
            old = before[name]
            same = (
                value.shape == old.shape
                and value.dtype == old.dtype
                and torch.equal(_bytes(value.detach()), _bytes(old))
            )
            if not same:
                changed.append(f"{prefix}{name}")
    return changed


@pytest.fixture
def without_jaxtyping():
    """jaxtyping's runtime checks off (the course staff's suite runs under its import hook), so a
    test sees the package's own argument checks, what a user sees."""
    jaxtyping.config.update("jaxtyping_disable", True)
    yield
    jaxtyping.config.update("jaxtyping_disable", False)


@pytest.fixture
def snapshot(record_property) -> Snapshot:
    return Snapshot(record_property)


# the package's files a snapshot test runs besides the component: loading the fixture, comparing
HARNESS = tuple(str(PACKAGE_DIR / name) for name in ("fixture_io.py", "testing.py"))


@functools.cache
def source_violations() -> tuple[source_rule.Violation, ...]:
    """The package's lines that break the source rule (cs336_basics/source_rule.py), read once."""
    return tuple(source_rule.check_package(PACKAGE_DIR))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A snapshot test (`test_<component>_matches_fixture`) fails if the component ran an operator
    that is not elementary, called the PyTorch built-in that computes it or library code its rule
    does not allow (cs336_basics/builtin_guard.py, elementary_ops.py, call_rule.py), or ran code
    whose source breaks the source rule (source_rule.py): the grader's rule, heard first here
    (process pools running in this process, serial_pools.py, as in the grader),
    as a failure of that test (a fixture would report it as an error at teardown)."""
    name = getattr(item, "originalname", item.name)
    component = name.removeprefix("test_").removesuffix("_matches_fixture")
    if component not in COMPONENTS or not name.endswith("_matches_fixture"):
        return (yield)
    every = [v for v in source_violations() if source_rule.costs_every_component(v)]
    if every:  # could hide what runs: not run at all
        raise AssertionError(source_rule.explain(every))
    with serial_pools(), assert_no_builtins(component, dispatch=False, harness=HARNESS) as recorder:
        result = yield
    costly = [v for v in source_violations() if source_rule.costs(v, recorder.entered)]
    if costly:
        raise AssertionError(source_rule.explain(costly))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An exception raised inside PyTorch (or another library) by your code: the report starts
    with your own frame, the line that called it, before the library's traceback."""
    report = yield
    if call.when == "call" and report.failed and call.excinfo is not None:
        if not call.excinfo.errisinstance((AssertionError, pytest.fail.Exception)):
            innermost = Path(str(call.excinfo.traceback[-1].path)).resolve()
            # raised inside a library (not by the package's own checks): your line first
            if PACKAGE_DIR not in innermost.parents and your_frame(call.excinfo.value) is not None:
                report.longrepr = (
                    f"{raised(call.excinfo.value)}\n"
                    f"(the full traceback follows; the frames after yours are the library's)\n\n{report.longrepr}"
                )
    return report


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", help="run the second tier too: the tests marked slow")


def pytest_configure(config):
    config.addinivalue_line("markers", "rung(n): a ladder check (tests/_ladder.py); runs before the snapshot tests")
    config.addinivalue_line(
        "markers", "smollm2: slow tests on the real SmolLM2 weights (run with -k smollm2; the staff suite runs its own)"
    )
    config.addinivalue_line(
        "markers", "slow: the second tier, run by `pytest --all`, by -m slow, or when named by path"
    )


def _keep_only_the_first_tier(config, items) -> None:
    """`pytest` alone runs the first tier; --all, a -m expression or test paths given on the
    command line run what they select, slow tests included."""
    named = config.args_source != pytest.Config.ArgsSource.TESTPATHS
    if config.getoption("--all") or config.getoption("markexpr") or named:
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


# The tensor-parallel pieces in the order the handout README's "parallel" section builds them,
# each with the words its tests' ids carry: the parallel tests run (and fail) in this order, so
# `-k parallel` shows the piece a student is on before the ones that build on it.
PARALLEL_PIECES = {
    "ColumnParallelLinear": ("column",),
    "RowParallelLinear": ("row",),
    "ParallelSwiGLUFFN": ("swiglu", "ffn"),
    "ParallelAttention": ("attention", "heads"),
    "ParallelTransformerLM": ("transformer", "lm"),
}


def parallel_piece(nodeid: str) -> int:
    """The index in PARALLEL_PIECES of the piece a test's id names first (after the file name);
    len(PARALLEL_PIECES) for a test that names none (it checks given code, or several pieces)."""
    name = nodeid.split("::", 1)[-1].removeprefix("test_parallel")
    found = [(name.find(w), i) for i, words in enumerate(PARALLEL_PIECES.values()) for w in words if w in name]
    return min(found)[1] if found else len(PARALLEL_PIECES)


# `-k NAME` with one of these names selects that one's tests only. pytest's -k matches substrings,
# so on its own "block" would also select ffn_block's tests and "train" (the training run,
# `cs336 train`) train_bpe's. A test belongs to the longest of these names its id contains (the
# course staff check that no id contains two that are not nested).
SELECTABLE = (*COMPONENTS, "train")


def own_name(nodeid: str) -> str | None:
    """The name in SELECTABLE a test belongs to: the longest one its id contains."""
    return max((n for n in SELECTABLE if n in nodeid.lower()), key=len, default=None)


def holds_no_test_of(filename: str, keyword: str) -> bool:
    """Whether test file `filename` holds no test whose own name is `keyword` (a name in
    SELECTABLE), by its name alone: each id in test_<stem>.py contains the stem, so (no id
    contains two names that are not nested) its own name contains the stem's own name."""
    stem_owner = own_name(filename.removesuffix(".py"))
    return filename.startswith("test_") and stem_owner is not None and stem_owner not in keyword


def pytest_ignore_collect(collection_path, config):
    """`-k NAME` does not import the test files of other names (most of the collection's time)."""
    keyword = (config.getoption("keyword") or "").strip()
    if keyword in SELECTABLE and collection_path.is_file() and holds_no_test_of(collection_path.name, keyword):
        return True
    return None


def _keep_only_own_tests(config, items) -> None:
    keyword = (config.getoption("keyword") or "").strip()
    if keyword in SELECTABLE:
        others = [item for item in items if own_name(item.nodeid) != keyword]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if own_name(item.nodeid) == keyword]


def run_order(item) -> tuple[int, int]:
    """Ladder rungs first (lowest rung first: the most basic check a correct implementation
    passes), then snapshot tests (their fingerprints name catalogued mistakes), then the rest."""
    marker = item.get_closest_marker("rung")
    if marker is not None:
        return 0, marker.args[0]
    return (1, 0) if "matches_fixture" in item.name else (2, 0)


def pytest_collection_finish(session):
    gc.freeze()  # the collected tests and their parameters, as the imports above


def pytest_unconfigure(config):
    """Hand the frozen objects back as the interpreter exits, after pytest's own last collections
    (which then walk only what the tests made): the interpreter's final collection frees them
    (frozen, extension types such as triton's nanobind ones are reported as leaks at exit)."""
    atexit.register(gc.unfreeze)


def pytest_collection_modifyitems(config, items):
    """Ladder rungs, then snapshot tests (`test_<component>_matches_fixture`) first (run_order):
    a component's first failure says what was observed and where to look, and a catalogued
    mistake is still named by the snapshot test that follows. The parallel tests, in
    the slots they then hold, in PARALLEL_PIECES order. The slow SmolLM2 tests (real weights) run
    only when -k names smollm2, or in the course staff's own suite."""
    _keep_only_own_tests(config, items)
    _keep_only_the_first_tier(config, items)
    keyword = config.getoption("keyword") or ""
    if "smollm2" not in keyword:
        slow = [item for item in items if item.get_closest_marker("smollm2") and "staff" not in item.path.parts]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item not in slow]
    items.sort(key=run_order)
    slots = [i for i, item in enumerate(items) if item.path.name.startswith("test_parallel")]
    ordered = sorted((items[i] for i in slots), key=lambda item: parallel_piece(item.nodeid))
    for i, item in zip(slots, ordered, strict=True):
        items[i] = item
