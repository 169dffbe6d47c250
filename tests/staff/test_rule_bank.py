"""Staff only: the rule on samples no list predicted, graded and tested at home alike.

Two banks, written from the handout alone by people who never read the rule's code or its lists
(tests/staff/_hostile.py's layout; each README's `component:` names what it touches):
  - tests/staff/routes/: routes around the rule (library code doing a component's work, reached
    through helpers, forged identities, switched-off recorders, names built at run time, kernels
    no list names). Each scores 0 for every component it touches, and those components' public
    snapshot tests fail.
  - tests/staff/honest/: honest solutions in unusual styles. Each keeps full marks, and its
    components' public snapshot tests pass.
So no public test passes where the grade gives a component 0, for any sample.

    uv run python -m tests.staff.test_rule_bank [BANK/SAMPLE ...]   # grade and print each outcome
"""

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from cs336_basics.staff.grader import preflight, runner
from tests.staff._hostile import build, readme_field
from tests.staff.test_hostile import CONFIG, build_reference, grade_one

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
BANKS = {"routes": HERE / "routes", "honest": HERE / "honest"}
SAMPLES = [
    f"{bank}/{p.name}"
    for bank, folder in BANKS.items()
    if folder.is_dir()
    for p in sorted(folder.iterdir())
    if (p / "README.md").is_file()
]


@dataclass
class Outcome:
    scores: dict[str, float]  # component -> points the grade gave
    passed_publicly: set[str]  # components whose public snapshot tests all pass
    messages: str  # the grade's messages and the public run's output, for a failure's report


def components(sample: str) -> list[str]:
    bank, name = sample.split("/")
    return readme_field(name, "component", BANKS[bank]).split()


def public_passes(path: Path, comps: list[str]) -> tuple[set[str], str]:
    """The components whose public snapshot tests all pass on the package at path (a run that
    crashes passes none), and the run's output."""
    files = {c: "tests/test_parallel_adapters.py" if c == "parallel" else f"tests/test_{c}.py" for c in comps}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-k",
            "matches_fixture",
            *files.values(),
        ],
        cwd=path,
        env=dict(os.environ, PYTHONPATH=str(path)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout
    if done.returncode not in (0, 1):  # a crash, an interrupted run: nothing passed
        return set(), out[-4000:]
    passed = {c for c, f in files.items() if f"PASSED {f}::" in out and not re.search(rf"(FAILED|ERROR) {f}::", out)}
    return passed, out[-4000:]


def outcome(sample: str, reference: Path, tmp: Path) -> Outcome:
    bank, name = sample.split("/")
    comps = components(sample)
    path = build(name, reference, tmp / bank, samples=BANKS[bank])
    report = grade_one(path, *comps)
    passed, output = public_passes(path, comps)
    messages = "\n".join(r.output for r in report.results if not r.case.hidden)
    messages += "".join(f"\n--- grader note ---\n{n}" for n in report.notes if "failed" in n)
    return Outcome(report.component_scores(), passed, f"{messages}\n--- public tests ---\n{output}")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    if sys.platform != "linux" or preflight.missing():
        pytest.skip(f"the banks are graded in the full sandbox only: missing {preflight.missing()}")
    runner.start_forkserver()
    tmp = tmp_path_factory.mktemp("bank")
    for bank in BANKS:
        (tmp / bank).mkdir()
    reference = build_reference(tmp)
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {s: pool.submit(outcome, s, reference, tmp) for s in SAMPLES}
        return {s: f.result() for s, f in futures.items()}


ROUTES = [s for s in SAMPLES if s.startswith("routes/")]
HONEST = [s for s in SAMPLES if s.startswith("honest/")]


# ids by number: a sample's name may hold two components' names, which `-k` must not select
@pytest.mark.parametrize("sample", ROUTES, ids=[f"route{i}" for i in range(len(ROUTES))])
def test_route_scores_0_and_fails_its_public_tests(outcomes, sample):
    got = outcomes[sample]
    for component in components(sample):
        assert got.scores[component] == 0, f"{sample}: {component} scored {got.scores[component]}\n{got.messages}"
        assert component not in got.passed_publicly, f"{sample}: {component}'s public tests passed\n{got.messages}"


@pytest.mark.parametrize("sample", HONEST, ids=[f"style{i}" for i in range(len(HONEST))])
def test_honest_style_keeps_full_marks_and_passes_its_public_tests(outcomes, sample):
    got = outcomes[sample]
    for component in components(sample):
        assert got.scores[component] == CONFIG.points[component], f"{sample}: {component}\n{got.messages}"
    failed = set(components(sample)) - got.passed_publicly
    assert not failed, f"{sample}: public tests failed for {failed}\n{got.messages}"


if __name__ == "__main__":
    import tempfile

    runner.start_forkserver()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        for bank in BANKS:
            (tmp / bank).mkdir()
        ref = build_reference(tmp)
        for s in sys.argv[1:] or SAMPLES:
            o = outcome(s, ref, tmp)
            scores = " ".join(f"{c}={o.scores[c]:g}/{CONFIG.points[c]}" for c in components(s))
            print(f"{s}: grade {scores}; public passes: {sorted(o.passed_publicly) or 'none'}", flush=True)
