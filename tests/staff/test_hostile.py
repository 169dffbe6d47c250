"""Staff only: the hostile samples of tests/staff/hostile/, each graded in the full sandbox.

One folder per sample (as otter-grader keeps its example submissions): README.md says the
attack, the component it targets and the expected outcome in lines of the form

    component: silu
    runs: silu gelu        (optional: the components graded, in order; default: the component)
    expected: score 0, flagged

and every other file is an overlay onto the handout with the reference restored: appended to
the file of the same path (so a later `def silu` replaces the reference's), or created if the
handout has no such file. Each sample is graded by `grade()`, what `cs336 grade` runs, with only
its component configured, as root in the full sandbox. `score 0`: the component scores 0;
`flagged`: the static check (grader/static_check.py) reports a line of the overlay for staff
review, in the report and in results.json's staff-only `extra_data`, never in a test's output.

    uv run python -m tests.staff.test_hostile [SAMPLE ...]   # grade and print each outcome
"""

import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from cs336_basics.staff.grader import preflight, runner
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.grade import GradeReport, grade
from cs336_basics.staff.grader.report import to_gradescope
from cs336_basics.staff.handout import build_handout, restore_solutions

SAMPLES_DIR = Path(__file__).resolve().parent / "hostile"
SAMPLES = sorted(p.name for p in SAMPLES_DIR.iterdir() if (p / "README.md").is_file())
CONFIG = load_config()
# as tests/staff/test_grader.py: room for a loaded CI machine, little for a hang
LIMITS = replace(CONFIG.limits, time_per_component_s=8, startup_s=30)


def declared(name: str) -> tuple[str, set[str]]:
    """(component, expected outcomes) from the sample's README."""
    text = (SAMPLES_DIR / name / "README.md").read_text()
    component = re.search(r"^component: *(\w+)", text, re.M).group(1)
    expected = {e.strip() for e in re.search(r"^expected: *(.+)$", text, re.M).group(1).split(",")}
    assert expected <= {"score 0", "flagged"} and expected, f"{name}: unknown expectation {expected}"
    return component, expected


def runs(name: str) -> list[str]:
    """The components the sample is graded on, in order: its README's `runs:`, else its component."""
    found = re.search(r"^runs: *(.+)$", (SAMPLES_DIR / name / "README.md").read_text(), re.M)
    return found.group(1).split() if found else [declared(name)[0]]


def overlays(name: str) -> list[Path]:
    root = SAMPLES_DIR / name
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.name != "README.md"
                  and "__pycache__" not in p.parts)


def build(name: str, reference: Path, out: Path) -> Path:
    """The reference with the sample's overlay files appended (or added), at out/name."""
    root = shutil.copytree(reference, out / name)
    for rel in overlays(name):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        before = target.read_text() if target.exists() else ""
        target.write_text(before + ("\n\n" if before else "") + (SAMPLES_DIR / name / rel).read_text())
    return root


def build_reference(tmp: Path) -> Path:
    build_handout(tmp / "handout", lock=False)
    reference = shutil.copytree(tmp / "handout", tmp / "reference")
    restore_solutions(reference)
    return reference


def grade_one(path: Path, *components: str) -> GradeReport:
    config = replace(CONFIG, points={c: CONFIG.points[c] for c in components}, limits=LIMITS)
    return grade(path, config)


def describe(report: GradeReport) -> str:
    findings = [f"{f.path}:{f.line} {f.what}" for f in getattr(report, "review", [])]
    return f"score {report.score:g}/{report.max_score:g}; flagged: {findings or 'nothing'}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, GradeReport]:
    if sys.platform != "linux" or preflight.missing():
        pytest.skip(f"the hostile samples are graded in the full sandbox only: missing {preflight.missing()}")
    runner.start_forkserver()
    tmp = tmp_path_factory.mktemp("hostile")
    reference = build_reference(tmp)
    paths = {name: build(name, reference, tmp) for name in SAMPLES}
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(grade_one, path, *runs(name)) for name, path in paths.items()}
        futures["reference silu"] = pool.submit(grade_one, reference, "silu")
        futures["reference rmsnorm"] = pool.submit(grade_one, reference, "rmsnorm")
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name", SAMPLES)
def test_hostile_sample_is_contained(graded, name):
    component, expected = declared(name)
    report = graded[name]
    assert report.points == {c: CONFIG.points[c] for c in runs(name)}
    if "score 0" in expected:
        assert report.component_scores()[component] == 0, (
            f"{name}: {describe(report)}\n" + "\n".join(r.output for r in report.results))
    overlay_lines = {(str(rel), line.strip()) for rel in overlays(name)
                     for line in (SAMPLES_DIR / name / rel).read_text().splitlines()}
    if "flagged" in expected:  # with the line: one of the overlay's own lines
        assert report.review, f"{name}: nothing flagged for review ({describe(report)})"
        assert all((f.path, f.code) in overlay_lines for f in report.review), describe(report)
    data = to_gradescope(report)
    assert bool(report.review) == ("review" in data.get("extra_data", {}))
    shown = [t["output"] for t in data["tests"] if t["visibility"] != "hidden"]
    assert not any(f"{f.path}:{f.line}" in text for f in report.review for text in shown)


@pytest.mark.parametrize("component", ["silu", "rmsnorm"])
def test_hostile_reference_scores_full_and_is_not_flagged(graded, component):
    report = graded[f"reference {component}"]
    assert report.score == report.max_score, describe(report)
    assert not report.review, describe(report)


if __name__ == "__main__":
    import tempfile

    runner.start_forkserver()
    names = sys.argv[1:] or SAMPLES
    with tempfile.TemporaryDirectory() as tmp:
        reference = build_reference(Path(tmp))
        for name in names:
            report = grade_one(build(name, reference, Path(tmp)), *runs(name))
            print(f"{name:<22} {describe(report)}", flush=True)
            for r in report.results:
                if not r.passed:
                    print(f"    {r.case.name}: {r.output.splitlines()[0][:150]}")
