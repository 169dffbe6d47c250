"""Staff only: what students upload, as the grader sees it. `cs336 submit`'s zip of the reference,
run through `cs336 grade`, gets full marks; the whole assignment folder zipped under a top folder,
with a .venv of 60,000 files and a 256 MB file, .git and caches, grades exactly the same and
never has its .venv extracted; a submission the grader cannot grade says, on the first line
Gradescope shows, why and what to submit instead.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from cs336_basics import REPO
from cs336_basics.staff.grader import runner
from cs336_basics.staff.grader import submission as sub
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.grade import grade
from cs336_basics.staff.grader.report import summary_table, to_gradescope
from cs336_basics.staff.handout import build_handout, restore_solutions
from tests.staff._limits import quick_limits

CONFIG = load_config()
TEST_CONFIG = replace(CONFIG, limits=quick_limits(CONFIG, 10, startup_s=10))
TOP = "assignment1-basics"  # students zip the folder itself
VENV_FILES = 60_000
BIG_FILE_MB = 256
WHAT_TO_SUBMIT = "Submit the submission.zip that `uv run cs336 submit` writes"


def _env(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def whole_folder_zip(handout: Path, out: Path) -> Path:
    """The handout folder zipped as a student might: under a top folder, with a fake .venv
    (60,000 small files, a 256 MB one, pyvenv.cfg and a decoy package in site-packages),
    .git, .pytest_cache, __pycache__ with bytecode, tests and fixtures."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for path in sorted(handout.rglob("*")):
            if path.is_file() and path.name != "submission.zip":
                z.write(path, f"{TOP}/{path.relative_to(handout).as_posix()}")
        z.writestr(f"{TOP}/cs336_basics/__pycache__/functional.cpython-311.pyc", b"\x00not bytecode")
        z.writestr(f"{TOP}/.pytest_cache/v/cache/lastfailed", "{}")
        z.writestr(f"{TOP}/.git/HEAD", "ref: refs/heads/main\n")
        z.writestr(f"{TOP}/.venv/pyvenv.cfg", "home = /usr/bin\n")
        site = f"{TOP}/.venv/lib/python3.11/site-packages"
        z.writestr(f"{site}/cs336_basics/__init__.py", "raise ImportError('the .venv copy was graded')\n")
        for i in range(VENV_FILES):
            z.writestr(zipfile.ZipInfo(f"{site}/pkg{i // 1000}/m{i % 1000}.py"), b"")
        with z.open(f"{site}/torch/lib/libtorch_cpu.so", "w") as big:
            block = bytes(2**20)
            for _ in range(BIG_FILE_MB):
                big.write(block)
    return out


@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    """The handout with the reference's solutions restored, and its `cs336 submit` zip."""
    runner.start_forkserver()  # its `import torch` overlaps the handout's build
    root = tmp_path_factory.mktemp("submit") / "handout"
    build_handout(root, lock=False)
    restore_solutions(root, REPO)
    done = subprocess.run(
        [sys.executable, "-m", "cs336_basics.cli", "submit", "--no-tests"],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote " in done.stdout and "submission.zip" in done.stdout
    return root


@pytest.fixture(scope="module")
def folder_zip(handout, tmp_path_factory) -> Path:
    return whole_folder_zip(handout, tmp_path_factory.mktemp("folder") / "whole_folder.zip")


@pytest.fixture(scope="module")
def graded(handout, folder_zip, tmp_path_factory) -> dict:
    """`cs336 grade submission.zip` (the command, in a subprocess) while the whole-folder zip is
    graded here: {"cli": (exit code, console, results.json), "whole_folder": GradeReport}."""
    tmp = tmp_path_factory.mktemp("graded")
    results = tmp / "results.json"
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cs336_basics.staff.cli",
            "grade",
            str(handout / "submission.zip"),
            "--results",
            str(results),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    report = grade(folder_zip, TEST_CONFIG)
    console, _ = cli.communicate(timeout=300)
    return {
        "cli": (cli.returncode, console, json.loads(results.read_text()) if results.exists() else None),
        "whole_folder": report,
    }


def test_submission_zip_of_cs336_submit_holds_only_the_package(handout):
    with zipfile.ZipFile(handout / "submission.zip") as z:
        names = set(z.namelist())
    package = {p.relative_to(handout).as_posix() for p in _package_files(handout)}
    assert names == package


def test_submission_zip_of_cs336_submit_grades_full_marks_with_cs336_grade(graded):
    code, console, results = graded["cli"]
    assert code == 0 and results is not None, console
    assert results["score"] == CONFIG.max_score, console
    assert results["output"].startswith("Public tests:")


def test_submission_whole_folder_zip_with_a_large_venv_grades_the_same(graded):
    _, _, results = graded["cli"]
    whole = to_gradescope(graded["whole_folder"])
    assert whole["score"] == results["score"] == CONFIG.max_score
    assert [(t["name"], t["status"]) for t in whole["tests"]] == [(t["name"], t["status"]) for t in results["tests"]]


def test_submission_whole_folder_zip_extracts_only_the_package(handout, folder_zip, tmp_path):
    package = sub.unpack(folder_zip, tmp_path / "scratch")
    assert package == tmp_path / "scratch" / TOP / "cs336_basics"
    extracted = {
        p.relative_to(tmp_path / "scratch").as_posix() for p in (tmp_path / "scratch").rglob("*") if p.is_file()
    }
    assert extracted == {f"{TOP}/{p.relative_to(handout).as_posix()}" for p in _package_files(handout)}


def _package_files(handout: Path) -> list[Path]:
    """The handout package's files: its modules and the source rule's manifest (given.json)."""
    package = handout / "cs336_basics"
    return [*package.rglob("*.py"), package / "given.json"]


@pytest.mark.parametrize("kind", ["zip", "folder"])
def test_submission_package_inside_venv_or_git_is_never_taken(tmp_path, kind):
    # same depth as the real package: were .venv or .git searched, the grader would find two
    root = tmp_path / "sub"
    for decoy in (".venv/cs336_basics", ".git/cs336_basics", "venv/cs336_basics"):
        (root / decoy).mkdir(parents=True)
        (root / decoy / "__init__.py").write_text("raise ImportError('decoy')\n")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "work" / "cs336_basics").mkdir(parents=True)
    (root / "work" / "cs336_basics" / "__init__.py").write_text("")
    if kind == "zip":
        submission = Path(shutil.make_archive(str(tmp_path / "sub"), "zip", root))
        assert sub.unpack(submission, tmp_path / "scratch") == tmp_path / "scratch" / "work" / "cs336_basics"
        assert sorted(p.name for p in (tmp_path / "scratch").iterdir()) == ["work"]
    else:
        assert sub.unpack(root, tmp_path / "scratch") == root / "work" / "cs336_basics"


def test_submission_with_two_packages_at_the_same_depth_is_refused(tmp_path):
    for top in ("a", "b"):
        (tmp_path / top / "cs336_basics").mkdir(parents=True)
        (tmp_path / top / "cs336_basics" / "__init__.py").write_text("")
    with pytest.raises(
        sub.SubmissionError, match=r"more than one cs336_basics/ package \(a/cs336_basics, b/cs336_basics\)"
    ):
        sub.find_package(tmp_path)


def _first_line_and_console(submission: Path, config=TEST_CONFIG) -> tuple[str, str, float]:
    report = grade(submission, config)
    return to_gradescope(report)["output"].splitlines()[0], summary_table(report), report.score


def test_submission_zip_without_the_package_says_what_to_submit_first(tmp_path):
    bad = tmp_path / "inside_the_package.zip"  # zipped from inside cs336_basics/
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("__init__.py", "")
        z.writestr("nn/functional.py", "")
    first, console, score = _first_line_and_console(bad)
    assert score == 0
    assert first.startswith(
        "Your submission could not be graded: no cs336_basics/ package (a folder with __init__.py) in the zip"
    )
    assert WHAT_TO_SUBMIT in first
    assert f"not graded: {first}" in console


def test_submission_package_over_the_size_limit_says_what_to_submit_first(tmp_path):
    root = tmp_path / "sub"
    (root / "cs336_basics").mkdir(parents=True)
    (root / "cs336_basics" / "__init__.py").write_text("")
    with open(root / "cs336_basics" / "checkpoint.pt", "wb") as f:
        f.truncate(6 * 2**20)
    first, console, _ = _first_line_and_console(root)
    assert "cs336_basics/ holds more than 500 files or 5 MB" in first and WHAT_TO_SUBMIT in first
    assert f"not graded: {first}" in console


def test_submission_zip_with_a_member_list_over_the_limit_is_refused_unread(folder_zip, tmp_path, monkeypatch):
    monkeypatch.setattr(sub, "MAX_ARCHIVE_LISTING", 2**20)  # 1 MB; this zip's list is ~6 MB
    monkeypatch.setattr(zipfile, "ZipFile", None)  # refused from the end record alone
    with pytest.raises(
        sub.SubmissionError,
        match=r"whole_folder.zip lists 6\d{4} files \(6 MB of names\); the grader reads member lists of at most 1 MB",
    ):
        sub.unpack(folder_zip, tmp_path / "scratch")
