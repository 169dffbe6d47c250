"""Measure the held-out mistake bank against a repository's public suite (and optionally its grader).

For each mistake in tests/staff/heldout/*.toml: copy the repository's package and tests into a
scratch directory, apply the one-bug patch, run the component's public tests
(`pytest -x -q -p no:cacheprovider -k <component> tests/test_*.py`, niced) and record whether the
suite kills the mistake and the first failure a student sees. With --grade, grade the patched
package for that one component with `cs336 grade` and record the score.

    python tests/staff/heldout/run.py [REPO] [--only ID_OR_COMPONENT ...] [--jobs N] [--grade]

REPO defaults to the repository holding this script; its .venv's Python runs the tests and the
grader. Results go to --out (JSON, rewritten after every mistake, so an interrupted run resumes
where it stopped: a mistake already measured against the same commit and the same patch is
skipped) and to a Markdown summary next to it. See README.md for how to judge the messages.
"""

import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository: cs336_basics.staff.public_tests

from cs336_basics import POINTS  # noqa: E402
from cs336_basics.staff.public_tests import make_copy, nodeid, quiet_env, repo_python, test_files  # noqa: E402

MESSAGE_LINES = 40
JUDGEMENTS = ("names", "describes", "related", "wrong", "nothing")


@dataclass(frozen=True)
class Mistake:
    component: str
    id: str
    description: str
    file: str
    old: str
    new: str

    def digest(self) -> str:
        text = "\0".join((self.component, self.file, self.old, self.new))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_bank(bank: Path) -> list[Mistake]:
    """Every mistake of every <component>.toml in `bank` (a .toml that declares `component`;
    judgements files do not), in file order."""
    mistakes, seen = [], set()
    for path in sorted(bank.glob("*.toml")):
        data = tomllib.loads(path.read_text())
        if "component" not in data:
            continue
        component = data["component"]
        for entry in data["mistake"]:
            m = Mistake(component, entry["id"], entry["description"], entry["file"], entry["old"], entry["new"])
            if m.id in seen:
                raise ValueError(f"{path}: mistake id {m.id!r} appears twice in the bank")
            seen.add(m.id)
            mistakes.append(m)
    return mistakes


def patched_text(repo: Path, m: Mistake) -> str:
    """The reference file with the mistake's `old` replaced by `new`; ValueError unless `old` occurs once."""
    text = (repo / m.file).read_text()
    count = text.count(m.old)
    if count != 1:
        raise ValueError(f"{m.id}: `old` occurs {count} times in {m.file} (must be exactly once)")
    return text.replace(m.old, m.new)


def _shown_lines(text: str) -> list[str]:
    """What a student reads first: pytest's `E ` lines if the report has them, else the whole text."""
    lines = text.splitlines()
    e_lines = [line[4:] if line.startswith("E   ") else line[1:].strip() for line in lines if line.startswith("E ")]
    chosen = e_lines or lines
    return chosen[:MESSAGE_LINES]


def first_failure(junit: Path, root: Path) -> dict | None:
    """The first failed or errored test case of a JUnit report: its node id, kind and message."""
    if not junit.exists():
        return None
    for case in ET.parse(junit).getroot().iter("testcase"):
        for kind in ("failure", "error"):
            node = case.find(kind)
            if node is not None:
                text = node.text or node.get("message") or ""
                return {
                    "test": nodeid(case.get("classname", ""), case.get("name", ""), root),
                    "kind": kind,
                    "message": "\n".join(_shown_lines(text)),
                }
    return None


def run_public(repo: Path, copy: Path, component: str, timeout: float, files: list[str] | None = None) -> dict:
    """The component's public tests in `copy`, stopping at the first failure. `files` (those the
    reference's run selected tests from; all tests/test_*.py if None) only saves collection time:
    pytest runs them in the same order, so the first failure is the same."""
    tests = files or sorted(os.path.relpath(p, copy) for p in glob.glob(str(copy / "tests" / "test_*.py")))
    junit = copy / "junit.xml"
    cmd = ["nice", "-n", "10", repo_python(repo), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    cmd += ["-k", component, f"--junitxml={junit}", *tests]
    start = time.time()
    try:
        proc = subprocess.run(
            cmd, cwd=copy, env=quiet_env({"PYTHONPATH": str(copy)}), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": round(time.time() - start, 1), "first_failure": None}
    summary = (proc.stdout.strip().splitlines() or [""])[-1]
    if proc.returncode == 0:
        status = "survived"
    elif proc.returncode in (1, 2):
        status = "killed"
    else:
        status = f"pytest exit {proc.returncode}"
    failure = first_failure(junit, copy)
    if files is None and status == "survived":
        return {
            "status": status,
            "seconds": round(time.time() - start, 1),
            "summary": summary,
            "files": test_files(junit, copy),
        }
    if status == "killed" and failure is None:
        failure = {
            "test": "(collection)",
            "kind": "error",
            "message": "\n".join(proc.stdout.splitlines()[-MESSAGE_LINES:]),
        }
    return {"status": status, "seconds": round(time.time() - start, 1), "summary": summary, "first_failure": failure}


def run_grade(repo: Path, copy: Path, component: str, timeout: float) -> dict:
    """`cs336 grade -k component` of the copy's package (that component alone, with its points).
    The copy's staff/ folder is removed first: a student's package has none (the handout leaves it
    out), and the grader's source rule checks a submission's staff/ folder, so keeping it would
    score every component 0."""
    shutil.rmtree(copy / "cs336_basics" / "staff", ignore_errors=True)
    results = copy / "results.json"
    staff_cli = "import sys; from cs336_basics.staff.cli import main; sys.argv[0] = 'cs336'; sys.exit(main())"
    cmd = ["nice", "-n", "10", repo_python(repo), "-c", staff_cli, "grade", "-k", component]
    cmd += ["--allow-unsandboxed", "--results", str(results), str(copy)]
    try:
        proc = subprocess.run(cmd, cwd=repo, env=quiet_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"grade": "timeout"}
    if not results.exists():
        return {"grade": "error", "grade_output": (proc.stdout + proc.stderr)[-2000:]}
    data = json.loads(results.read_text())
    return {"score": data.get("score"), "max_score": float(POINTS[component])}


def measure(repo: Path, m: Mistake | None, component: str, args, files: list[str] | None, public: bool) -> dict:
    """Copy, patch (unless m is None: the reference itself), run the public tests (if `public`) and
    the grade (if args.grade); what was measured, as a record."""
    with tempfile.TemporaryDirectory(prefix="heldout-", dir=args.workdir) as tmp:
        copy = Path(tmp)
        make_copy(repo, copy)
        if m is not None:
            (copy / m.file).write_text(patched_text(repo, m))
        record = run_public(repo, copy, component, args.timeout, files) if public else {}
        if args.grade:
            record.update(run_grade(repo, copy, component, args.timeout))
    return record


CODE_PATHS = ["cs336_basics", "tests", "fixtures", "hidden_fixtures", "pyproject.toml"]
BANK_PATH = "tests/staff/heldout/"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True).stdout.strip()


def code_id(repo: Path, rev: str = "HEAD") -> str:
    """What the measurement depends on: the package, tests and fixtures at `rev` (the bank and its
    results left out, so committing them does not invalidate a run), "+dirty" if the work tree differs."""
    listing = [
        line for line in _git(repo, "ls-tree", "-r", rev, "--", *CODE_PATHS).splitlines() if BANK_PATH not in line
    ]
    digest = hashlib.sha256("\n".join(listing).encode()).hexdigest()[:16]
    if rev == "HEAD" and _git(repo, "status", "--porcelain", "--", *CODE_PATHS, f":!{BANK_PATH}"):
        digest += "+dirty"
    return digest


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def selected(mistakes: list[Mistake], only: list[str]) -> list[Mistake]:
    return [m for m in mistakes if not only or m.id in only or m.component in only]


def check_bank(repo: Path, mistakes: list[Mistake]) -> int:
    """Each patch applies exactly once and the patched file still compiles; the number of problems."""
    problems = 0
    for m in mistakes:
        try:
            compile(patched_text(repo, m), m.file, "exec")
        except (ValueError, SyntaxError) as e:
            print(f"{m.component}/{m.id}: {e}")
            problems += 1
    print(f"{len(mistakes)} mistakes checked, {problems} problems")
    return problems


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "repo", nargs="?", default=str(HERE.parents[2]), help="repository to measure (default: this one)"
    )
    parser.add_argument("--bank", default=str(HERE), help="directory of <component>.toml files")
    parser.add_argument("--out", default=None, help="results JSON (default: <bank>/results.json)")
    parser.add_argument("--only", nargs="*", default=[], help="mistake ids or component names")
    parser.add_argument("--jobs", type=int, default=1, help="mistakes measured at once (default 1)")
    parser.add_argument("--grade", action="store_true", help="also grade the component with `cs336 grade`")
    parser.add_argument("--check", action="store_true", help="only check that every patch applies and compiles")
    parser.add_argument("--force", action="store_true", help="re-measure mistakes already in the results")
    parser.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per pytest or grade run")
    parser.add_argument("--workdir", default=None, help="where the scratch copies go (default: the temp dir)")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    repo = Path(args.repo).resolve()
    mistakes = selected(load_bank(Path(args.bank)), args.only)
    if check_bank(repo, mistakes) or args.check:
        return 1 if not args.check else 0
    out = Path(args.out) if args.out else Path(args.bank) / "results.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    commit, code = _git(repo, "rev-parse", "HEAD"), code_id(repo)
    results["__meta__"] = {"repo": str(repo), "commit": commit, "code": code, "grade": args.grade}
    jobs = [(None, c) for c in dict.fromkeys(m.component for m in mistakes)] + [(m, m.component) for m in mistakes]
    lock = threading.Lock()

    def key(m, c):
        return m.id if m is not None else f"reference/{c}"

    def public_fresh(m, c) -> bool:
        old = results.get(key(m, c))
        digest = m.digest() if m is not None else "reference"
        same_code = old and old.get("code", code_id(repo, old.get("commit", "HEAD"))) == code
        return bool(same_code and old.get("digest") == digest and not args.force)

    def todo(m, c):
        graded = "score" in results.get(key(m, c), {}) or "grade" in results.get(key(m, c), {})
        return not public_fresh(m, c) or (args.grade and not graded)

    def one(m, c):
        files = None if m is None else results.get(f"reference/{c}", {}).get("files")
        public = not public_fresh(m, c)
        record = measure(repo, m, c, args, files, public)
        record.update(component=c, commit=commit, code=code, digest=m.digest() if m is not None else "reference")
        if m is not None:
            record.update(description=m.description, file=m.file)
        with lock:
            results[key(m, c)] = record if public else {**results[key(m, c)], **record}
            write_json(out, results)
            done = results[key(m, c)]
            print(f"{key(m, c)}: {done['status']} ({done['seconds']} s) {done.get('score', '')}", flush=True)

    pending = [(m, c) for m, c in jobs if todo(m, c)]
    print(f"{len(pending)} of {len(jobs)} runs to do against {repo} at {commit}", flush=True)
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for phase in ([j for j in pending if j[0] is None], [j for j in pending if j[0] is not None]):
            for f in [pool.submit(one, m, c) for m, c in phase]:  # the references first: their test files
                f.result()
    print(f"done in {time.time() - start:.0f} s wall", flush=True)
    write_json(out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
