"""A GradeReport as Gradescope's results.json and as a table for the console.

results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/): top-level
`score`, `output`, `tests`; each test has name, score, max_score, status, output and
visibility: public cases `visible`, hidden ones `after_published`. No `execution_time`: a
duration the submission's code controls could encode what it saw of the hidden inputs (the staff
console prints the grader's own timings). The static check's findings (static_check.py), for
staff review, go in `extra_data` (stored by Gradescope, never shown to students) and in one
test of 0 points with visibility `hidden` (shown to instructors only), never in another test's
output.

Bounded and plain: every test's output is cleaned (sanitize.py) and capped at MAX_OUTPUT_CHARS,
all of them together at MAX_TOTAL_CHARS (later outputs are then cut to a fixed sentence), so
results.json is valid UTF-8 JSON of at most MAX_RESULTS_BYTES: 100,000 characters of at most
4 bytes (2 for a JSON-escaped newline, tab, quote or backslash) plus a few hundred bytes per test.
"""

import json
import os
from pathlib import Path

from cs336_basics.atomic_write import write_atomic
from cs336_basics.staff.grader.grade import GradeReport
from cs336_basics.staff.grader.sanitize import MAX_OUTPUT_CHARS, MAX_TOTAL_CHARS, clean
from cs336_basics.staff.grader.static_check import MAX_FINDINGS

MAX_REVIEW_CHARS = 300  # one static-check finding: path, line, what, the line's code
# 464 kB: outputs, plus names and numbers of < 1000 tests; then the findings, twice (extra_data and their test)
MAX_RESULTS_BYTES = 4 * MAX_TOTAL_CHARS + 2**16 + 2 * 4 * (MAX_FINDINGS * MAX_REVIEW_CHARS + MAX_OUTPUT_CHARS)


def _outputs(report: GradeReport) -> list[str]:
    """Each test's output, clean and capped, the total capped too."""
    texts, total = [], 0
    for r in report.results:
        text = clean(r.output, MAX_OUTPUT_CHARS)
        if total + len(text) > MAX_TOTAL_CHARS:
            text = "passed" if r.passed else "output not shown: earlier tests' outputs filled the space for them"
        total += len(text)
        texts.append(text)
    return texts


QUANTUM = 1024  # max_scores are multiples of 1/1024: binary fractions, whose float sums are exact


def _shares(report: GradeReport) -> list[float]:
    """Each test's max_score: the exact share (a Fraction) rounded once, cumulatively per
    component, to a multiple of 1/QUANTUM, so that a component's tests add up to exactly its
    points and all tests to exactly the total, in floating point too, summed in any order (10
    points over 6 tests: 1.6669921875, 1.666015625, ...; Gradescope shows 1.67)."""
    shares, done = [], {}
    for r in report.results:
        before = done.get(r.case.component, 0)
        done[r.case.component] = before + r.max_score
        shares.append((round(done[r.case.component] * QUANTUM) - round(before * QUANTUM)) / QUANTUM)
    return shares


def cannot_grade(report: GradeReport) -> str | None:
    """Why nothing could be graded, when every test failed with one and the same message (the
    submission was refused, or did not import): that message's first line, else None. It then
    opens results.json's `output`, the first thing Gradescope shows, and the console summary."""
    outputs = {r.output for r in report.results}
    if not report.results or any(r.passed for r in report.results) or len(outputs) != 1:
        return None
    line = _headline(outputs.pop())
    return line[:1].upper() + line[1:]


def to_gradescope(report: GradeReport) -> dict:
    tests = [
        {
            "name": r.case.title,
            "score": share if r.passed else 0.0,
            "max_score": share,
            "status": "passed" if r.passed else "failed",
            "output": output,
            "visibility": "after_published" if r.case.hidden else "visible",
        }
        for r, share, output in zip(report.results, _shares(report), _outputs(report), strict=True)
    ]
    public = [r for r in report.results if not r.case.hidden]
    output = (
        f"Public tests: {sum(r.passed for r in public)} of {len(public)} passed. "
        "Hidden tests are shown once grades are published. Each component's points are shared "
        "equally by its test cases, public and hidden."
    )
    if (why := cannot_grade(report)) is not None:
        output = f"{why}\n{output}"
    if report.grader_problems:
        output = (
            f"{len(report.grader_problems)} test(s) could not run because the autograder itself ran out of "
            f"memory; their points are not taken from you, and course staff will regrade.\n{output}"
        )
    if report.leaderboard is not None:
        output = f"{output}\n{report.leaderboard.message}"
    data = {
        "score": sum(t["score"] for t in tests),  # exact: binary fractions
        "output": output,
        "stdout_visibility": "hidden",
        # staff only (Gradescope stores extra_data and shows it to no student): how the grading was isolated
        "extra_data": {"isolation": report.isolation, "not_graded_grader_out_of_memory": report.grader_problems},
        "tests": tests,
    }
    if report.leaderboard is not None and report.leaderboard.gradescope() is not None:
        data["leaderboard"] = report.leaderboard.gradescope()
    if report.review:
        lines = [clean(str(f), MAX_REVIEW_CHARS) for f in report.review]
        data["extra_data"]["review"] = lines
        tests.append(
            {
                "name": "Staff review: lines flagged by the static check (no points)",
                "score": 0.0,
                "max_score": 0.0,
                "status": "failed",
                "output": clean("\n".join(lines), MAX_OUTPUT_CHARS),
                "visibility": "hidden",
            }
        )
    return data


def write_results(report: GradeReport, path: Path) -> Path:
    """Write results.json atomically (a file or link already at path is replaced, never followed)."""
    return _write_json(to_gradescope(report), path)


def write_refusal(message: str, path: Path) -> Path:
    """results.json for a grading the grader refused (runner.WorkerCannotStart): the message and no
    test, so that Gradescope reports a failed autograder run, not a score of 0."""
    return _write_json({"output": f"The autograder could not grade this submission: {message}", "tests": []}, path)


def _write_json(results: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(results, indent=2, ensure_ascii=False).encode("utf-8")  # strict: no surrogates
    if len(data) > MAX_RESULTS_BYTES:
        raise ValueError(f"results.json would be {len(data)} bytes, over its bound of {MAX_RESULTS_BYTES}")
    write_atomic(path, data)
    os.chmod(path, 0o644)  # readable by the harness whatever the umask
    return path


def _headline(output: str) -> str:
    """The line that says what went wrong: the first, or for a traceback the exception's line."""
    lines = [line for line in output.strip().splitlines() if line.strip()] or [""]
    return lines[-1].strip() if lines[0].endswith(":") else lines[0]


def summary_table(report: GradeReport) -> str:
    """One row per component: public and hidden cases passed, points, the first failure's first line."""
    header = f"{'component':<18} {'public':>6} {'hidden':>6} {'points':>13}  first failure"
    lines = [header, "-" * len(header)]
    for component, points in report.points.items():
        rows = [r for r in report.results if r.case.component == component]
        pub = [r for r in rows if not r.case.hidden]
        hid = [r for r in rows if r.case.hidden]
        score = float(sum(r.score for r in rows))
        failed = next((r for r in rows if not r.passed), None)
        why = f"{failed.case.name}: {_headline(clean(failed.output))[:70]}" if failed else ""
        passed = f"{sum(r.passed for r in pub):>3}/{len(pub):<2} {sum(r.passed for r in hid):>3}/{len(hid):<2}"
        lines.append(f"{component:<18} {passed} {score:>6.2f}/{points:<6g}  {why}")
    lines.append(f"{'total':<32} {report.score:>6.2f}/{report.max_score:<6g}  ({report.seconds:.1f} s)")
    if (why := cannot_grade(report)) is not None:
        lines.append(f"not graded: {why}")
    if report.leaderboard is not None:
        lines.append(clean(report.leaderboard.message, 300).splitlines()[0])
    if report.review:
        lines.append(f"staff review: {len(report.review)} line(s) flagged by the static check (no points taken):")
        lines += [f"  {clean(str(f), MAX_REVIEW_CHARS)}" for f in report.review]
    return "\n".join(lines)
