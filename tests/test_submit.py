"""`cs336 submit`: submission.zip holds the cs336_basics/ package and nothing else, within the
grader's limits, and is written even when the tests cannot run."""

import os
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from cs336_basics import COMPONENTS, status
from cs336_basics import submit as S


def assignment_folder(root: Path) -> Path:
    """A student's folder: the package with caches and hidden files, and everything around it."""
    files = {
        "cs336_basics/__init__.py": "",
        "cs336_basics/nn/functional.py": "def f():\n    return 1\n",
        "cs336_basics/nn/modules/__init__.py": "",
        "cs336_basics/__pycache__/functional.cpython-311.pyc": "bytecode",
        "cs336_basics/nn/stale.pyc": "bytecode",
        "cs336_basics/.DS_Store": "finder",
        "cs336_basics/.ipynb_checkpoints/functional-checkpoint.py": "",
        "cs336_basics/staff/grade.py": "",  # the course staff's tools, in their repository only
        ".venv/pyvenv.cfg": "home = /usr/bin",
        ".venv/lib/python3.11/site-packages/torch/__init__.py": "",
        ".git/HEAD": "ref: refs/heads/main",
        "tests/test_linear.py": "",
        "fixtures/linear.safetensors": "tensors",
        "README.md": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    os.symlink(root / "README.md", root / "cs336_basics" / "notes.md")
    return root


def test_submit_zip_holds_the_package_sources_only(tmp_path):
    out, files, links = S.write_submission(assignment_folder(tmp_path))
    assert out == tmp_path / "submission.zip"
    with zipfile.ZipFile(out) as z:
        names = sorted(z.namelist())
    assert names == ["cs336_basics/__init__.py", "cs336_basics/nn/functional.py", "cs336_basics/nn/modules/__init__.py"]
    assert [p.as_posix() for p in links] == ["cs336_basics/notes.md"]  # never followed, reported


def test_submit_refuses_a_package_over_the_graders_limit_and_writes_nothing(tmp_path):
    root = assignment_folder(tmp_path)
    with open(root / "cs336_basics" / "weights.bin", "wb") as f:
        f.truncate(S.MAX_PACKAGE_BYTES + 1)  # sparse: no disk written
    with pytest.raises(
        ValueError, match=r"the grader accepts at most 500 files and 5 MB\. Largest: cs336_basics/weights\.bin"
    ):
        S.write_submission(root)
    assert not (root / "submission.zip").exists()


def test_submit_refuses_a_folder_without_the_package(tmp_path):
    with pytest.raises(ValueError, match="no cs336_basics/__init__.py in"):
        S.write_submission(tmp_path)


def test_submit_warns_on_every_component_that_fails_or_did_not_run():
    table = {c: status.ComponentStatus(passed=3) for c in COMPONENTS}
    table["softmax"] = status.ComponentStatus(passed=1, failed=2, first_failure="run_softmax on fixture 'softmax': ...")
    del table["ffn_block"]
    assert S.red_components(table) == [
        "warning: softmax: 2 of 3 tests fail: run_softmax on fixture 'softmax': ...",
        "warning: ffn_block: no test ran",
    ]


def test_submit_writes_the_zip_even_when_the_tests_cannot_run(tmp_path, monkeypatch, capsys):
    def broken(*args):
        raise SystemExit("pytest did not produce a report")

    monkeypatch.setattr(S, "REPO", assignment_folder(tmp_path))
    monkeypatch.setattr(status, "run_tests", broken)
    assert S.run(SimpleNamespace(output=None, no_tests=False)) == 0
    out = capsys.readouterr().out
    assert "wrote " in out and "(3 files of cs336_basics/" in out
    assert (
        "could not show the status table (SystemExit: pytest did not produce a report); submission.zip is written"
        in out
    )
    assert zipfile.is_zipfile(tmp_path / "submission.zip")
