"""Staff only: the hostile samples of tests/staff/hostile/, each graded in the full sandbox.

One folder per sample (as otter-grader keeps its example submissions): README.md says the
attack, the component it targets and the expected outcome in lines of the form

    component: silu        (or several: each scores 0)
    runs: silu gelu        (optional: the components graded, in order; default: the component)
    expected: score 0, flagged
    named: F.silu          (optional: calls the public cases' messages must name)

and its files under append/ (and overlay/) are applied to the handout with the reference restored
by tests/staff/_hostile.py's `build`, the one builder (its docstring gives the layout). Each sample is graded by `grade()`, what `cs336 grade` runs, with only
its components configured, as root in the full sandbox. Expectations: `score 0`, the component
scores 0; `flagged`, the static check (grader/static_check.py) reports lines of the overlay for
staff review, in the report and results.json's staff-only `extra_data` and hidden test, never
in a student-visible output; `no execution_time`, results.json holds no duration; `formula
escaped`, graded by `grade_all` under the README's `submitted as:` name, gradebook.csv shows
that name as text.

    uv run python -m tests.staff.test_hostile [SAMPLE ...]   # grade and print each outcome
"""

import csv
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from cs336_basics import POINTS
from cs336_basics.staff.grader import preflight, runner
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.grade import GradeReport, grade
from cs336_basics.staff.grader.gradebook import grade_all
from cs336_basics.staff.grader.report import to_gradescope
from cs336_basics.staff.grader.static_check import check_package, findings_of
from cs336_basics.staff.handout import build_handout, restore_solutions
from tests.staff._hostile import SAMPLES_DIR, build, readme_field, sample_files
from tests.staff._limits import quick_limits

pytestmark = pytest.mark.slow  # second tier: every hostile sample graded in the sandbox

CONFIG = load_config()
# as tests/staff/test_grader.py: room for a loaded CI machine, little for a hang
LIMITS = quick_limits(CONFIG, 8, startup_s=30, total_s=3600)


# The samples graded here are those whose README declares `component:` and `expected:`; the
# others (sandbox limits, grader-level attacks) are run by tests/staff/test_grader_isolation.py.
SAMPLES = sorted(
    p.name
    for p in SAMPLES_DIR.iterdir()
    if (p / "README.md").is_file() and readme_field(p.name, "component") and readme_field(p.name, "expected")
)


def declared(name: str) -> tuple[str, set[str]]:
    """(component, expected outcomes) from the sample's README."""
    component = readme_field(name, "component")
    expected = {e.strip() for e in readme_field(name, "expected").split(",")}
    assert expected and expected <= {"score 0", "flagged", "no execution_time", "formula escaped"}, (
        f"{name}: unknown expectation {expected}"
    )
    return component, expected


def runs(name: str) -> list[str]:
    """The components the sample is graded on, in order: its README's `runs:`, else its component."""
    return (readme_field(name, "runs") or declared(name)[0]).split()


def build_reference(tmp: Path) -> Path:
    build_handout(tmp / "handout", lock=False)
    reference = shutil.copytree(tmp / "handout", tmp / "reference")
    restore_solutions(reference)
    return reference


def grade_one(path: Path, *components: str) -> GradeReport:
    config = replace(CONFIG, points={c: CONFIG.points[c] for c in components}, limits=LIMITS)
    return grade(path, config)


def describe(report: GradeReport) -> str:
    findings = [f"{f.path}:{f.line} {f.what}" for f in getattr(report, "review", [])]  # main had no review
    return f"score {report.score:g}/{report.max_score:g}; flagged: {findings or 'nothing'}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, GradeReport]:
    if sys.platform != "linux" or preflight.missing():
        pytest.skip(f"the hostile samples are graded in the full sandbox only: missing {preflight.missing()}")
    runner.start_forkserver()
    tmp = tmp_path_factory.mktemp("hostile")
    reference = build_reference(tmp)
    paths = {name: build(name, reference, tmp) for name in SAMPLES if "formula escaped" not in declared(name)[1]}
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(grade_one, path, *runs(name)) for name, path in paths.items()}
        futures["reference"] = pool.submit(grade_one, reference, "silu", "rmsnorm")
        futures |= {
            name: pool.submit(grade_all_as, name, reference, tmp)
            for name in SAMPLES
            if "formula escaped" in declared(name)[1]
        }
        return {name: f.result() for name, f in futures.items()}


def grade_all_as(name: str, reference: Path, tmp: Path) -> Path:
    """grade_all on a directory holding only the sample, under its README's `submitted as:` name;
    returns the gradebook."""
    submitted = readme_field(name, "submitted as")
    inbox = tmp / f"inbox-{name}"
    inbox.mkdir()
    build(name, reference, tmp).rename(inbox / submitted)
    config = replace(CONFIG, points={c: CONFIG.points[c] for c in runs(name)}, limits=LIMITS)
    grade_all(inbox, tmp / f"results-{name}", tmp / f"gradebook-{name}.csv", jobs=1, config=config, echo=lambda _: None)
    return tmp / f"gradebook-{name}.csv"


@pytest.mark.parametrize("name", SAMPLES)
def test_hostile_sample_is_contained(graded, name):
    component, expected = declared(name)
    if "formula escaped" in expected:
        submitted = readme_field(name, "submitted as")
        with open(graded[name], newline="") as f:
            rows = list(csv.reader(f))
        assert rows[1][0] == "'" + submitted  # a spreadsheet shows it as text, never evaluates it
        return
    report = graded[name]
    assert report.points == {c: CONFIG.points[c] for c in runs(name)}
    if "score 0" in expected:  # every component the README names
        assert all(report.component_scores()[c] == 0 for c in component.split()), (
            f"{name}: {describe(report)}\n" + "\n".join(r.output for r in report.results)
        )
    for callee in (readme_field(name, "named") or "").split():  # in the public cases' messages
        assert any(callee in r.output for r in report.results if not r.case.hidden), f"{name}: {callee} not named"
    overlay_lines = {(str(f.target), line.strip()) for f in sample_files(name) for line in f.text().splitlines()}
    if "flagged" in expected:  # with the line: one of the overlay's own lines
        assert report.review, f"{name}: nothing flagged for review ({describe(report)})"
        assert all((f.path, f.code) in overlay_lines for f in report.review), describe(report)
    data = to_gradescope(report)
    if "no execution_time" in expected:
        assert report.seconds > 0 and not {"execution_time"} & set(data), data.keys()
    assert bool(report.review) == ("review" in data.get("extra_data", {}))
    shown = [t["output"] for t in data["tests"] if t["visibility"] != "hidden"]
    # the review is staff-only (a student's own file:line may appear: the call rule names it)
    assert not any(f"{f.path}:{f.line}: {f.what}" in text or f.what in text for f in report.review for text in shown)


def test_hostile_reference_scores_full_marks_and_is_not_flagged(graded):
    report = graded["reference"]
    assert report.score == report.max_score, describe(report)
    assert not report.review, describe(report)


def test_hostile_submission_s_points_change_no_score(tmp_path):
    """raises_points: a submission that raises every component's points (its __init__.py, and in
    place in the worker) earns silu's points out of silu's points, those of the grader's own copy
    of the package, in the report and in results.json."""
    if sys.platform != "linux" or preflight.missing():
        pytest.skip(f"the hostile samples are graded in the full sandbox only: missing {preflight.missing()}")
    runner.start_forkserver()
    sample = build("raises_points", build_reference(tmp_path), tmp_path)
    assert '"bonus": 1000' in (sample / "cs336_basics" / "__init__.py").read_text()
    report = grade_one(sample, "silu")
    assert report.points == {"silu": POINTS["silu"]} and POINTS["silu"] < 1000
    assert report.score == report.max_score == POINTS["silu"], describe(report)
    data = to_gradescope(report)
    graded = [t for t in data["tests"] if t["max_score"] > 0]
    assert {t["name"].split(":")[0] for t in graded} == {"silu"}, [t["name"] for t in graded]
    assert data["score"] == sum(t["max_score"] for t in data["tests"]) == POINTS["silu"]


def test_hostile_static_check_flags_nothing_in_the_reference_or_the_handout(tmp_path):
    """The whole package, every component: a correct from-scratch solution is never flagged."""
    reference = build_reference(tmp_path)
    assert check_package(reference / "cs336_basics") == []
    assert check_package(tmp_path / "handout" / "cs336_basics") == []


if __name__ == "__main__":
    import tempfile

    runner.start_forkserver()
    names = sys.argv[1:] or SAMPLES
    with tempfile.TemporaryDirectory() as tmp:
        reference = build_reference(Path(tmp))
        for name in names:
            if "formula escaped" in declared(name)[1]:
                print(
                    f"{name:<22} gradebook row: {open(grade_all_as(name, reference, Path(tmp))).read().splitlines()[1]}"
                )
                continue
            report = grade_one(build(name, reference, Path(tmp)), *runs(name))
            print(
                f"{name:<22} {describe(report)}; execution_time {to_gradescope(report).get('execution_time')}",
                flush=True,
            )
            for r in report.results:
                if not r.passed:
                    print(f"    {r.case.name}: {r.output.splitlines()[0][:150]}")


FLAGGED_SOURCES = [  # each names a banned built-in or bypass machinery on its last line
    "import torch.nn.functional as TF\ny = TF.silu(x)",
    "from torch.nn.functional import silu as s\ny = s(x)",
    "from torch.nn import functional\ny = functional.gelu(x)",
    "import torch\ny = torch.special.softmax(x, 0)",
    "import torch\ny = torch.ops.aten._softmax.default(x, -1, False)",
    "import torch\ny = torch.layer_norm(x, (4,))",
    "y = x.log_softmax(-1)",
    "import torch\nwith torch._C.DisableTorchFunction(): pass",
    "import torch\nlib = torch.library.Library('x', 'DEF')",
    "class T:\n    def __torch_function__(cls, *a): pass",
    "import os\npid = os.fork()",
    "from multiprocessing import Process",
    "import ctypes",
    "code = exec(text)",
    "with open(path, 'wb') as f: pass",
]
NOT_FLAGGED_SOURCES = [
    "from . import functional as F\ny = F.softmax(x, dim=-1)",  # the package's own kernels
    "from cs336_basics.nn import functional as F\ny = F.silu(x)",
    "import torch\ny = torch.sigmoid(x) * x + torch.rsqrt(x.pow(2).mean(-1, keepdim=True))",
    "text = name.replace('a', 'b')",
    "with open(path) as f: pass",
]


@pytest.mark.parametrize("index", range(len(FLAGGED_SOURCES)))
def test_hostile_static_check_flags_each_alias_and_bypass(index):
    source = FLAGGED_SOURCES[index]
    found = findings_of(source, "cs336_basics/nn/x.py")
    assert found and found[-1].line == source.count("\n") + 1, (source, found)


@pytest.mark.parametrize("index", range(len(NOT_FLAGGED_SOURCES)))
def test_hostile_static_check_leaves_elementary_code_alone(index):
    assert findings_of(NOT_FLAGGED_SOURCES[index], "cs336_basics/nn/x.py") == []


NO_NEW_TASKS = """
import ctypes, os, threading, torch
torch.set_num_threads(1)
from cs336_basics.builtin_guard import CallRecorder
from cs336_basics.staff.grader import seccomp
assert ctypes.CDLL(None).prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
seccomp.install_no_new_tasks()
with CallRecorder() as recorder:  # torch, its dispatch mode and the profiler observer need no new thread
    torch.nn.functional.silu(torch.randn(64, 64) @ torch.randn(64, 64))
assert "aten.silu" in recorder.calls and "aten.mm" in recorder.calls
try:
    threading.Thread(target=print).start()
    raise SystemExit("a thread started")
except RuntimeError:
    pass
try:
    os.fork()
    raise SystemExit("a process started")
except PermissionError:
    pass
print("refused")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="seccomp is Linux's")
def test_hostile_no_new_tasks_filter_refuses_threads_and_forks_but_not_torch():
    done = subprocess.run([sys.executable, "-c", NO_NEW_TASKS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "refused", done.stderr[-2000:]
