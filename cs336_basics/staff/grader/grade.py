"""Grade one submission: `grade(submission, config) -> GradeReport`.

    1. find the submission's cs336_basics/ (directory or zip) and copy only it into a fresh
       sandbox directory, next to the grader's pristine tests/adapters.py;
    2. load every graded case's fixture here, in the grader, and save only its inputs there;
    3. run the components in workers (runner.py, sandbox.py), which save the adapters' outputs;
    4. compare each output with the expected tensor, which never left this process
       (cs336_basics.testing.compare; hidden cases without the expected value in the message);
    5. score: a component's points are shared equally by its cases.
"""

import functools
import io
import os
import secrets
import shutil
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import torch

from cs336_basics.builtin_guard import explain, forbidden_calls
from cs336_basics.fixture_io import Fixture, load_fixture
from cs336_basics.staff.grader import sandbox
from cs336_basics.staff.grader.cases import ADAPTERS, REPO, GradedCase, graded_cases
from cs336_basics.staff.grader.config import GradingConfig, load_config
from cs336_basics.staff.grader.runner import ComponentRun, Runner, read_worker_file
from cs336_basics.staff.grader.submission import SubmissionError, copy_package, unpack
from cs336_basics.testing import compare

OUT_OF_MEMORY = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "out of memory")


@dataclass
class CaseResult:
    case: GradedCase
    passed: bool
    output: str
    score: Fraction
    max_score: Fraction


@dataclass
class GradeReport:
    submission: str
    results: list[CaseResult]
    points: dict[str, int | float]  # component -> its points, in running order
    notes: list[str] = field(default_factory=list)  # for staff: sandbox state, internal errors
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return float(sum(r.score for r in self.results))

    @property
    def max_score(self) -> float:
        return float(sum(r.max_score for r in self.results))

    def component_scores(self) -> dict[str, float]:
        return {c: float(sum(r.score for r in self.results if r.case.component == c)) for c in self.points}


def _plain_zip(raw: bytes, limit: int) -> bool:
    """torch.save's format: a zip of uncompressed members (so no zip bomb can unpack in the grader)."""
    try:
        members = zipfile.ZipFile(io.BytesIO(raw)).infolist()
    except zipfile.BadZipFile:
        return False
    return all(m.compress_type == zipfile.ZIP_STORED for m in members) and sum(m.file_size for m in members) <= limit


def judge(case: GradedCase, fixture: Fixture, run: ComponentRun, uid: int | None, memory_mb: int) -> tuple[bool, str]:
    """(passed, what the student sees) for one case."""
    if not run.finished:
        return False, run.message
    limit = 2**20 + 16 * fixture.expected.numel()  # the expected tensor in float64, plus room for an error text
    raw = read_worker_file(run.home / f"{case.name}.pt", uid, limit=limit + 1)
    if raw is None:
        return False, f"{fixture.adapter}: no output was saved for this case"
    if len(raw) > limit or not _plain_zip(raw, limit):
        return False, f"{fixture.adapter}: the saved output is not what the grader wrote (too large or malformed)"
    try:
        out = torch.load(io.BytesIO(raw), weights_only=True, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - any malformed file
        return False, f"{fixture.adapter}: the output could not be read back ({type(e).__name__})"
    if not isinstance(out, dict):
        return False, f"{fixture.adapter}: the saved output is not what the grader wrote"
    if isinstance(out.get("error"), str):
        error = out["error"].rstrip()
        if out.get("tampered") is True:
            return False, f"{fixture.adapter} was not graded: {error}"
        if any(s in error for s in OUT_OF_MEMORY):
            return False, (f"{fixture.adapter} ran out of memory (a grading process may use at most {memory_mb} MB "
                           f"of address space, PyTorch included):\n{error}")
        return False, f"{fixture.adapter} raised an exception:\n{error}"
    calls, operators = out.get("calls"), out.get("operators")
    if not (isinstance(calls, list) and all(isinstance(c, str) for c in calls) and isinstance(operators, int)):
        return False, f"{fixture.adapter}: the saved output is not what the grader wrote"
    banned = forbidden_calls(case.component, calls)
    if banned:
        return False, explain(case.component, banned)
    if operators <= 0:
        return False, (f"{fixture.adapter}: the grader saw no PyTorch operator run while computing this case "
                       "(its call recording was bypassed), so the output cannot be graded")
    out = out.get("output")
    if not isinstance(out, torch.Tensor):
        return False, f"{fixture.adapter} returned a {type(out).__name__}, not a torch.Tensor"
    if out.layout != torch.strided or out.is_quantized:
        return False, f"{fixture.adapter} returned a {out.layout} tensor; a dense (strided) tensor is expected"
    # hidden cases: no index and no got/expected values in the message, only counts and error sizes
    result = compare(out, fixture.expected, case.tol, fixture.out_dtype, reveal_values=not case.hidden)
    if result.ok:
        return True, f"passed: max scaled error {result.max_scaled_err:.1e} (tolerance {case.tol:.1e})"
    return False, f"{fixture.adapter} on case {case.name!r}: {result.message}"


def _judge_safely(*args) -> tuple[bool, str]:
    """judge(), with an output that breaks the comparison failing its case only."""
    try:
        return judge(*args)
    except Exception as e:  # noqa: BLE001 - a tensor crafted to break compare()
        return False, f"the output could not be checked ({type(e).__name__}: {str(e)[:200]})"


def _readable(root: Path) -> None:
    """Directories 0755, files 0644, owned by the grader: the worker reads them and writes none."""
    for here, _, files in os.walk(root):
        os.chmod(here, 0o755)
        for name in files:
            os.chmod(os.path.join(here, name), 0o644)


def _prepare(submission: Path, base: Path, cases: list[GradedCase], fixtures: dict[str, Fixture]) -> Path:
    """The sandbox directory: code/ (the submission's package + pristine adapters.py) and inputs/."""
    root = base / secrets.token_hex(16)  # unguessable, in a directory others may enter but not list
    code, inputs = root / "code", root / "inputs"
    inputs.mkdir(parents=True)
    copy_package(unpack(submission, base / "private" / "submission"), code / "cs336_basics")
    shutil.copyfile(ADAPTERS, code / "adapters.py")
    for case in cases:
        torch.save(fixtures[case.name].kwargs, inputs / f"{case.name}.pt")
    _readable(root)
    return root


@functools.lru_cache(maxsize=1024)
def _load_fixture(path: Path, mtime_ns: int) -> Fixture:
    """One fixture file, read once per version (grade-all grades many submissions against it)."""
    return load_fixture(path.stem, path.parent)


def _load_fixtures(cases: list[GradedCase]) -> dict[str, Fixture]:
    fixtures = {}
    for case in cases:
        fx = _load_fixture(case.path, case.path.stat().st_mtime_ns)
        if fx.component != case.component:
            raise ValueError(f"fixture {case.path} is for component {fx.component!r}, graded as {case.component!r}")
        fixtures[case.name] = fx
    return fixtures


def _score(cases: list[GradedCase], points: dict, verdicts: dict[str, tuple[bool, str]]) -> list[CaseResult]:
    count = {c: sum(1 for k in cases if k.component == c) for c in points}
    results = []
    for case in cases:
        each = Fraction(str(points[case.component])) / count[case.component]
        passed, output = verdicts[case.name]
        results.append(CaseResult(case, passed, output, each if passed else Fraction(0), each))
    return results


def grade(submission: Path, config: GradingConfig | None = None) -> GradeReport:
    """Grade a submission directory or zip. Staff problems (a missing fixture, a bad config)
    raise; problems with the submission, or inside the grader once it runs, become failed
    tests with a message, so every test is always reported."""
    config = config or load_config()
    start = time.monotonic()
    cases = graded_cases(config.components)
    fixtures = _load_fixtures(cases)
    report = GradeReport(str(submission), [], dict(config.points), notes=[f"grader and fixtures: {REPO}"])
    base = Path(tempfile.mkdtemp(prefix="cs336-grade-"))
    try:
        os.chmod(base, 0o711)
        (base / "private").mkdir(mode=0o700)
        try:
            root = _prepare(Path(submission), base, cases, fixtures)
        except SubmissionError as e:
            verdicts = {c.name: (False, f"your submission could not be graded: {e}") for c in cases}
        except Exception as e:  # noqa: BLE001 - an unreadable archive must not stop results.json
            report.notes.append("could not prepare the submission:\n" + traceback.format_exc(limit=-3))
            verdicts = {c.name: (False, f"your submission could not be read: {type(e).__name__}") for c in cases}
        else:
            verdicts = _run(root, base / "private", cases, fixtures, config, report)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    report.results = _score(cases, config.points, verdicts)
    report.seconds = time.monotonic() - start
    return report


def _run(root: Path, private: Path, cases, fixtures, config: GradingConfig, report: GradeReport) -> dict:
    new_root = root.parent / "new-root"  # where the worker's private root is mounted (in its namespace only)
    new_root.mkdir(mode=0o755)
    spec = sandbox.plan(root, root, new_root, config.limits, config.isolate)
    runner = Runner(root, private, root / "code", root / "inputs", spec)
    plan = [(comp, [(c.name, fixtures[c.name].adapter) for c in cases if c.component == comp]) for comp in config.components]
    try:
        runs = runner.run(plan)
        verdicts = {c.name: _judge_safely(c, fixtures[c.name], runs[c.component], spec.uid, config.limits.memory_mb)
                    for c in cases}
    except Exception:  # noqa: BLE001 - a grader bug must still produce a complete results.json
        print(traceback.format_exc(), file=sys.stderr)
        report.notes.append("internal grader error:\n" + traceback.format_exc(limit=-3))
        verdicts = {c.name: (False, "the grader failed internally; course staff have the details") for c in cases}
    report.notes += list(dict.fromkeys(runner.notes))
    report.notes.append(f"{runner.workers} grading process(es) started; seconds per component: "
                        + ", ".join(f"{c} {t:.2f}" for c, t in runner.seconds.items()))
    return verdicts
