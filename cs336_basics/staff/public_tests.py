"""A component's public tests run on a scratch copy of a repository: the pieces the held-out mistake
bank (tests/staff/heldout/run.py) and `cs336 mutate` share.

    make_copy(repo, dest)     the package and tests copied, fixtures and data linked
    repo_python(repo)         the repository's .venv Python (else this one)
    quiet_env(extra)          one thread, no bytecode, no inherited PYTHONPATH
    test_files(junit, root)   the test files a JUnit report ran tests from

Standard library only: heldout/run.py imports it from a plain `python3`.
"""

import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def make_copy(repo: Path, dest: Path) -> None:
    """The package and the tests copied (fixtures and data linked) so a patch touches only the copy."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(repo / "cs336_basics", dest / "cs336_basics", ignore=ignore, symlinks=True)
    shutil.copytree(repo / "tests", dest / "tests", ignore=ignore, symlinks=True)
    shutil.copy2(repo / "pyproject.toml", dest / "pyproject.toml")
    for name in ("fixtures", "hidden_fixtures", "data"):
        if (repo / name).exists():
            (dest / name).symlink_to(repo / name)


def repo_python(repo: Path) -> str:
    candidate = repo / ".venv" / "bin" / "python"
    return str(candidate) if candidate.exists() else sys.executable


def quiet_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    env.update(extra or {})
    return env


def nodeid(classname: str, name: str, root: Path) -> str:
    """A pytest node id from JUnit's dotted classname (module[.Class]) and test name."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        if (root / Path(*parts[:i])).with_suffix(".py").exists():
            return "::".join(["/".join(parts[:i]) + ".py", *parts[i:], name])
    return f"{classname}::{name}"


def test_files(junit: Path, root: Path) -> list[str]:
    """The test files a JUnit report ran tests from, sorted as pytest was given them."""
    cases = ET.parse(junit).getroot().iter("testcase") if junit.exists() else []
    return sorted({nodeid(c.get("classname", ""), c.get("name", ""), root).split("::")[0] for c in cases})
