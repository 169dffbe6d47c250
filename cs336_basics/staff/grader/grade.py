"""Grade one submission: `grade(submission, config) -> GradeReport`.

    1. find the submission's cs336_basics/ (directory or zip) and copy only it into a fresh
       sandbox directory, next to the grader's pristine tests/adapters.py and tests/adapter_checks.py;
    2. load every graded case's fixture here, in the grader; draw the public cases' inputs anew
       with a secret seed (fresh.py: the shipped fixtures earn nothing) and compute their
       expected outputs with the reference; save only the inputs in the sandbox;
    3. run the components in workers (runner.py, sandbox.py), which save the adapters' outputs;
    4. compare each output with the expected tensor, which never left this process
       (cs336_basics.testing.compare; hidden cases without the expected value in the message);
    5. score: a component's points are shared equally by its cases;
    6. the submission's source against the source rule (cs336_basics/source_rule.py), judged
       here against the handout this grader builds: a case fails when the code it ran breaks it;
    7. for staff: the submission's source, statically checked (static_check.py) for lines that
       name a banned built-in or the machinery that hides one; findings cost no points.

What a hidden case's output may say (the staff's decision): a fixed sentence naming the outcome
only. From judge: passed; raised an exception; wrong output (no shape, dtype or value); called a
banned built-in; ran code whose source breaks the source rule; not graded (the grader's code was changed); ran out of memory; no output saved;
an output not as the grader wrote it, or holding no tensor, or not checkable; no operator seen;
not checked in time. From the runner, per component: time limit, process ended, import failed,
budget ran out, cgroup out of memory. Code that sees a hidden input could pick the outcome to
signal it: at most log2(18), about 4 bits per hidden case and grading, shown only once grades
are published (visibility `after_published`). Never shown: the exception's type (some 60 built-in
ones, 6 more bits before), the kind of wrong output, anything the code printed.
"""

import functools
import json
import math
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import safetensors.torch
import torch

from cs336_basics import REPO, source_rule
from cs336_basics.builtin_guard import explain, forbidden_calls
from cs336_basics.fixture_io import Fixture
from cs336_basics.staff.grader import protocol, sandbox
from cs336_basics.staff.grader.cases import GradedCase, graded_cases
from cs336_basics.staff.grader.config import GradingConfig, load_config
from cs336_basics.staff.grader.fixtures import load_fixture
from cs336_basics.staff.grader.fresh import fresh_public_fixtures
from cs336_basics.staff.grader.leaderboard import Entry, evaluate_entry
from cs336_basics.staff.grader.runner import ComponentRun, Runner, WorkerCannotStart, read_worker_file
from cs336_basics.staff.grader.sanitize import clean, hide_paths
from cs336_basics.staff.grader.static_check import Finding, check_package
from cs336_basics.staff.grader.submission import SubmissionError, copy_package, unpack
from cs336_basics.staff.reference import ADAPTER_CHECKS, ADAPTERS
from cs336_basics.testing import compare

OUT_OF_MEMORY = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "out of memory")


class Verdict(NamedTuple):
    passed: bool
    message: str  # what the student sees
    breach: bool = False  # the case's code broke the rule: its whole component scores 0 (_breaches_cost_all)


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
    review: list[Finding] = field(default_factory=list)  # for staff: static_check's findings, no points
    violations: tuple = ()  # source_rule's, which cost the components that ran them
    isolation: dict = field(default_factory=dict)  # for staff: preflight.statement(): level, held, missing
    grader_problems: list[str] = field(default_factory=list)  # cases not graded through the grader's fault (awarded)
    leaderboard: Entry | None = None  # the leaderboard entry's evaluation (grader/leaderboard.py)

    @property
    def score(self) -> float:
        return float(sum(r.score for r in self.results))

    @property
    def max_score(self) -> float:
        return float(sum(r.max_score for r in self.results))

    def component_scores(self) -> dict[str, float]:
        return {c: float(sum(r.score for r in self.results if r.case.component == c)) for c in self.points}


MAX_HEADER_BYTES = 1 << 16  # a safetensors header: one tensor's entry, the calls recorded, an error text


def read_output(raw: bytes, numel: int) -> tuple[dict[str, str], torch.Tensor | None] | None:
    """(metadata, the `output` tensor or None) of a worker's safetensors file, or None if it is not
    one the worker could have written: data, never objects (no pickle, no torch.load)."""
    if len(raw) < 8:
        return None
    n = int.from_bytes(raw[:8], "little")
    if n > MAX_HEADER_BYTES or 8 + n > len(raw):
        return None
    try:
        header = json.loads(raw[8 : 8 + n])
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or set(header) - {"__metadata__", protocol.OUTPUT}:
        return None
    meta = header.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        return None
    entry = header.get(protocol.OUTPUT)
    if entry is not None:
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not (
            isinstance(shape, list)
            and all(isinstance(d, int) and 0 <= d <= numel for d in shape)
            and math.prod(shape) <= numel
        ):
            return None  # not the expected size: never materialised
    try:
        tensors = safetensors.torch.load(raw)
    except Exception:  # noqa: BLE001 - any malformed file
        return None
    return meta, tensors.get(protocol.OUTPUT)


def judge(
    case: GradedCase,
    fixture: Fixture,
    run: ComponentRun,
    uid: int | None,
    memory_mb: int,
    code_dir: Path,
    violations: tuple = (),
) -> Verdict:
    """(passed, what the student sees) for one case. A hidden case's message is one of a few fixed
    sentences: it never holds text the student's code produced, nor values derived from its inputs.
    code_dir: the sandbox's code directory (hidden in error texts, as every host path)."""
    if not run.finished:
        return Verdict(False, run.message)  # a hidden worker's run messages are fixed already (Runner.reveal)
    numel = fixture.expected.numel()
    limit = 8 + MAX_HEADER_BYTES + 8 * numel  # checked before reading: a larger file is not read at all
    raw = read_worker_file(run.home / protocol.output_file(case.name), uid, limit=limit + 1)
    if raw is None:
        return Verdict(False, f"{fixture.adapter}: no output was saved for this case")
    parsed = read_output(raw, numel) if len(raw) <= limit else None
    if parsed is None:
        return Verdict(
            False, f"{fixture.adapter}: the saved output is not what the grader wrote (too large or malformed)"
        )
    return _verdict(case, fixture, *parsed, memory_mb, code_dir, violations)


def _source_verdict(case: GradedCase, adapter: str, meta: dict[str, str], violations) -> str | None:
    """Why the case fails the source rule (source_rule.costs: the lines of the defs it ran, or any
    line that could hide what ran), or None; a missing or malformed record counts every line."""
    try:
        entered = {(str(p), int(n)) for p, n in json.loads(meta[protocol.ENTERED])}
    except (KeyError, ValueError, TypeError):
        entered = None
    costly = [v for v in violations if entered is None or source_rule.costs(v, entered)]
    if not costly:
        return None
    if case.hidden:
        return f"{adapter}: your source breaks the rule on what it may name (the public tests name the line)"
    return source_rule.explain(costly)


def _verdict(
    case: GradedCase, fixture: Fixture, meta: dict[str, str], out, memory_mb: int, code_dir: Path, violations=()
) -> Verdict:
    """The case's verdict from its worker's record: an exception, then the rule, then the output."""
    if protocol.ERROR in meta:
        return _error_verdict(fixture.adapter, case.hidden, meta, memory_mb, code_dir)
    broken = _rule_verdict(case, fixture.adapter, meta, violations)
    if broken is not None:
        return broken
    return _output_verdict(case, fixture, out)


def _error_verdict(adapter: str, hidden: bool, meta: dict[str, str], memory_mb: int, code_dir: Path) -> Verdict:
    error = clean(hide_paths(meta[protocol.ERROR], code_dir)).rstrip()
    if meta.get(protocol.TAMPERED) == protocol.YES:
        what = "your code changed the grader's adapters or its call recorder" if hidden else error
        return Verdict(False, f"{adapter} was not graded: {what}", breach=True)
    if any(s in error for s in OUT_OF_MEMORY):
        limit = f"a grading process may use at most {memory_mb} MB of address space, PyTorch included"
        return Verdict(False, f"{adapter} ran out of memory ({limit})" + ("" if hidden else f":\n{error}"))
    return Verdict(False, f"{adapter} raised an exception" + ("" if hidden else f":\n{error}"))


def _rule_verdict(case: GradedCase, adapter: str, meta: dict[str, str], violations) -> Verdict | None:
    """The case's breach of the rule (a forbidden call, a costly source line, no operator
    recorded), or a malformed record; None if the record shows neither."""
    try:
        calls, operators = json.loads(meta[protocol.CALLS]), int(meta[protocol.OPERATORS])
    except (KeyError, ValueError):
        calls, operators = None, 0
    if not (isinstance(calls, list) and all(isinstance(c, str) for c in calls)):
        return Verdict(False, f"{adapter}: the saved output is not what the grader wrote")
    banned = forbidden_calls(case.component, calls)
    if banned:
        if case.hidden:
            why = f"{adapter} called a PyTorch built-in or library code {case.component} may not use"
            return Verdict(False, why + " (the public tests name it)", breach=True)
        return Verdict(False, explain(case.component, banned), breach=True)
    source = _source_verdict(case, adapter, meta, violations)
    if source is not None:
        return Verdict(False, source, breach=True)
    if operators <= 0:
        why = "the grader saw no PyTorch operator run while computing this case (its call recording was bypassed)"
        return Verdict(False, f"{adapter}: {why}, so the output cannot be graded", breach=True)
    return None


def _output_verdict(case: GradedCase, fixture: Fixture, out) -> Verdict:
    adapter = fixture.adapter
    if not isinstance(out, torch.Tensor):
        return Verdict(False, f"{adapter}: the saved output holds no tensor")
    result = compare(out, fixture.expected, case.tol, fixture.out_dtype, reveal_values=not case.hidden)
    if case.hidden:  # a fixed sentence: counts, sizes and shapes of a wrong output could carry the inputs' values
        if result.ok:
            return Verdict(True, "passed")
        why = "wrong output (its shape, dtype or values; the public tests of this component say which)"
        return Verdict(False, f"{adapter} on case {case.name!r}: {why}")
    if result.ok:
        return Verdict(True, f"passed: max scaled error {result.max_scaled_err:.1e} (tolerance {case.tol:.1e})")
    return Verdict(False, f"{adapter} on case {case.name!r}: {result.message}")


def _judge_safely(case: GradedCase, *args) -> Verdict:
    """judge(), with an output that breaks the comparison failing its case only."""
    try:
        return judge(case, *args)
    except Exception as e:  # noqa: BLE001 - a tensor crafted to break compare()
        return Verdict(False, "the output could not be checked" + ("" if case.hidden else f" ({type(e).__name__})"))


def _readable(root: Path) -> None:
    """Directories 0755, files 0644, owned by the grader: the worker reads them and writes none."""
    for here, _, files in os.walk(root):
        os.chmod(here, 0o755)
        for name in files:
            os.chmod(os.path.join(here, name), 0o644)


def _prepare(submission: Path, base: Path, cases: list[GradedCase], fixtures: dict[str, Fixture]) -> Path:
    """The sandbox directory: code/ (the submission's package + pristine adapters.py and
    adapter_checks.py) and inputs/,
    with the public cases' inputs only (_run adds the hidden ones once no public worker is left)."""
    root = base / secrets.token_hex(16)  # unguessable, in a directory others may enter but not list
    code, inputs = root / "code", root / "inputs"
    inputs.mkdir(parents=True)
    copy_package(unpack(submission, base / "private" / "submission"), code / "cs336_basics")
    _restore_given(code)
    shutil.copyfile(ADAPTERS, code / "adapters.py")
    shutil.copyfile(ADAPTER_CHECKS, code / "adapter_checks.py")
    _write_inputs(inputs, [c for c in cases if not c.hidden], fixtures)
    _readable(root)
    return root


def _restore_given(code: Path) -> None:
    """The files the handout gives whole are this grader's copies, whatever the submission holds:
    a student cannot change them, and a submission from an older handout runs today's."""
    for rel, text in _given_texts().items():
        target = code / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_dir():
            raise SubmissionError(f"{rel} is not a regular file")
        target.write_text(text, encoding="utf-8")


def _write_inputs(inputs: Path, cases: list[GradedCase], fixtures: dict[str, Fixture]) -> None:
    for case in cases:
        torch.save(fixtures[case.name].kwargs, inputs / protocol.input_file(case.name))
        os.chmod(inputs / protocol.input_file(case.name), 0o644)


def _load_fixtures(cases: list[GradedCase]) -> dict[str, Fixture]:
    fixtures = {}
    for case in cases:
        fx = load_fixture(case.path)
        if fx.component != case.component:
            raise ValueError(f"fixture {case.path} is for component {fx.component!r}, graded as {case.component!r}")
        fixtures[case.name] = fx
    return fixtures


def _score(cases: list[GradedCase], points: dict, verdicts: dict[str, Verdict]) -> list[CaseResult]:
    count = {c: sum(1 for k in cases if k.component == c) for c in points}
    results = []
    for case in cases:
        each = Fraction(str(points[case.component])) / count[case.component]
        passed, output, _ = verdicts[case.name]
        results.append(CaseResult(case, passed, output, each if passed else Fraction(0), each))
    return results


def grade(submission: Path, config: GradingConfig | None = None) -> GradeReport:
    """Grade a submission directory or zip. Staff problems (a missing fixture, a bad config)
    raise, as does runner.WorkerCannotStart (a worker failed before any student code ran: the
    machine cannot grade anyone); problems with the submission, or inside the grader once it
    runs, become failed tests with a message, so every test is always reported."""
    from cs336_basics.staff.grader import preflight

    config = config or load_config()
    start = time.monotonic()
    budget_end = start + config.limits.total_s  # one budget for the whole grading, public and hidden
    cases = graded_cases(config.components)
    report = GradeReport(
        str(submission),
        [],
        {c: config.points[c] for c in config.components},
        notes=[f"grader and fixtures: {REPO}"],
        isolation=preflight.statement(config.isolate),
    )
    report.notes.append(
        f"isolation level {report.isolation['level']}; missing: "
        + (", ".join(report.isolation["missing"]) or "nothing")
    )
    fixtures = fresh_public_fixtures(_load_fixtures(cases), [c.name for c in cases if not c.hidden], report.notes)
    base = Path(tempfile.mkdtemp(prefix="cs336-grade-"))
    try:
        os.chmod(base, 0o711)
        (base / "private").mkdir(mode=0o700)
        try:
            root = _prepare(Path(submission), base, cases, fixtures)
        except SubmissionError as e:
            verdicts = {c.name: Verdict(False, f"your submission could not be graded: {e}") for c in cases}
        except Exception as e:  # noqa: BLE001 - an unreadable archive must not stop results.json
            report.notes.append("could not prepare the submission:\n" + source_rule.format_exc(limit=-3))
            verdicts = {c.name: Verdict(False, f"your submission could not be read: {type(e).__name__}") for c in cases}
        else:
            report.review = _review(root / "code" / "cs336_basics", report)
            report.violations = _violations(root / "code" / "cs336_basics", report)
            verdicts = _run(root, base / "private", cases, fixtures, config, report, budget_end)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    report.results = _score(cases, config.points, _breaches_cost_all(cases, verdicts))
    report.leaderboard = evaluate_entry(Path(submission), config, budget_end, report.notes)
    report.seconds = time.monotonic() - start
    return report


def _breaches_cost_all(cases: list[GradedCase], verdicts: dict[str, Verdict]) -> dict[str, Verdict]:
    """A component whose code broke the rule in any case (a forbidden call, a line against the
    source rule, a tampered or bypassed recorder) scores 0 in all its cases: hostile code gets
    nothing, however many of its cases never ran the offending code."""
    first = {}
    for c in cases:
        if verdicts[c.name].breach:
            first.setdefault(c.component, c)
    out = dict(verdicts)
    for c in cases:
        culprit = first.get(c.component)
        if culprit is None or out[c.name].breach or not out[c.name].passed:
            continue
        if c.hidden:  # a fixed sentence, as every hidden message
            where = "another case"
        else:
            where = "a hidden case" if culprit.hidden else f"case {culprit.name!r}"
        out[c.name] = Verdict(
            False, f"{c.component} scores 0 in every case: its code broke the rule in {where} (see that case)", True
        )
    return out


def _review(package: Path, report: GradeReport) -> list[Finding]:
    """static_check's findings on the submission's package (the grader's copy, which no worker writes)."""
    try:
        return check_package(package)
    except Exception:  # noqa: BLE001 - a checker bug must not stop the grading
        report.notes.append("static check failed:\n" + source_rule.format_exc(limit=-3))
        return []


def _violations(package: Path, report: GradeReport) -> tuple:
    """source_rule's violations in the submission's package (the grader's copy), judged against
    the handout this grader builds (never the submission's manifest). A checker failure fails
    every case: no grade is published on a rule that did not run."""
    try:
        return tuple(source_rule.check_package(package, _given()))
    except Exception:  # noqa: BLE001
        report.notes.append("source rule failed:\n" + source_rule.format_exc(limit=-3))
        return (source_rule.Violation("cs336_basics", 0, "the source rule could not check it", "", None),)


def _given() -> source_rule.Given:
    return _handout()[0]


def _given_texts() -> dict[str, str]:
    return _handout()[1]


@functools.cache
def _handout() -> tuple[source_rule.Given, dict[str, str]]:
    """What the handout gives, read once per process: the files it gives whole are restored from
    these texts, whose digests the source rule compares (a reference edited meanwhile changes neither)."""
    given = source_rule.given_by(REPO / "cs336_basics")
    texts = {rel: (REPO / rel).read_text(encoding="utf-8", errors="replace") for rel in given.files}
    files = {rel: source_rule.digest(text) for rel, text in texts.items()}
    return source_rule.Given(files, given.lines), texts


def _run(
    root: Path,
    private: Path,
    cases,
    fixtures,
    config: GradingConfig,
    report: GradeReport,
    budget_end: float | None = None,
) -> dict:
    """Public cases, then hidden ones, in separate workers (each pass with a user id of its own):
    text a student's code produces reaches a visible message only from a worker that never saw a
    hidden input, because hidden inputs are written only after every public worker has ended."""
    verdicts, workers, seconds = {}, 0, {}
    for hidden in (False, True):
        part = [c for c in cases if c.hidden == hidden]
        name = "hidden" if hidden else "public"
        if hidden:
            _write_inputs(root / "inputs", part, fixtures)
        runner, spec = _pass_runner(root, private, name, config, reveal=not hidden)
        plan = _plan(part, fixtures, config.components)
        try:
            runs = runner.run(plan, budget_end)
            verdicts |= _judge_pass(part, fixtures, runs, spec.uid, config, root / "code", report)
        except WorkerCannotStart:
            raise  # no worker can run here: nothing is graded, nobody is docked
        except Exception:  # noqa: BLE001 - a grader bug must still produce a complete results.json
            print(source_rule.format_exc(), file=sys.stderr)
            report.notes.append("internal grader error:\n" + source_rule.format_exc(limit=-3))
            verdicts |= {
                c.name: Verdict(False, "the grader failed internally; course staff have the details") for c in part
            }
        finally:
            sandbox.unmount_under(root / name)  # the workers' homes (tmpfs), read by now
        report.notes += [clean(n, 500) for n in dict.fromkeys(runner.notes) if clean(n, 500) not in report.notes]
        workers += runner.workers
        seconds |= {f"{c} ({name})": t for c, t in runner.seconds.items()}
    if report.grader_problems:
        report.notes.append(
            f"NOT GRADED (awarded): the container ran out of memory during {len(report.grader_problems)} "
            f"case(s): {', '.join(report.grader_problems)}; regrade with more memory"
        )
    report.notes.append(
        f"{workers} grading process(es) started; CPU seconds per component: "
        + ", ".join(f"{c} {t:.2f}" for c, t in seconds.items())
    )
    return verdicts


def _pass_runner(
    root: Path, private: Path, name: str, config: GradingConfig, reveal: bool
) -> tuple[Runner, sandbox.SandboxSpec]:
    """The Runner of one pass ("public" or "hidden"): its workers' homes under root/name, their
    private root mounted at new-root-<name> (in their namespace only)."""
    (root / name).mkdir(mode=0o755)
    new_root = root.parent / f"new-root-{name}"
    new_root.mkdir(mode=0o755)
    spec = sandbox.plan(root, root, new_root, config.limits, config.isolate)
    runner = Runner(
        root / name,
        private,
        root / "code",
        root / "inputs",
        spec,
        reveal=reveal,
        starts_processes=config.starts_processes,
    )
    return runner, spec


def _plan(part: list[GradedCase], fixtures, components: list[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(component, [(case, adapter), ...]), ...] in the configured order, components without a case left out."""
    plan = [(comp, [(c.name, fixtures[c.name].adapter) for c in part if c.component == comp]) for comp in components]
    return [p for p in plan if p[1]]


def _judge_pass(
    part: list[GradedCase], fixtures, runs: dict[str, ComponentRun], uid, config: GradingConfig, code: Path, report
) -> dict[str, Verdict]:
    """Each case's verdict: awarded if the container ran out of memory under its component (the
    grader's fault, listed in report.grader_problems), else judged within limits.judge_s of this
    thread's CPU time (load does not count)."""
    verdicts = {}
    deadline = time.thread_time() + config.limits.judge_s
    for c in part:
        if runs[c.component].grader_out_of_memory:  # the container's fault, not the student's: not docked
            verdicts[c.name] = Verdict(True, runs[c.component].message)
            report.grader_problems.append(c.name)
        elif time.thread_time() < deadline:
            verdicts[c.name] = _judge_safely(
                c, fixtures[c.name], runs[c.component], uid, config.limits.memory_mb, code, report.violations
            )
        else:
            verdicts[c.name] = Verdict(
                False,
                f"not checked: the grader's {config.limits.judge_s:g} CPU s for checking outputs ran out",
            )
    return verdicts
