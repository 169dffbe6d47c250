"""The Gradescope autograder bundle: `cs336 autograder OUT.zip`.

Gradescope unpacks the zip into /autograder/source, runs setup.sh once (as root) to build the
image, then for each submission copies run_autograder to /autograder/ and runs it; it must
leave /autograder/results/results.json. The bundle holds what grading needs and nothing of
the student's: the cs336_basics package (reference, staff tools, grader, grading.toml), the
grader's copies of tests/adapters.py and tests/adapter_checks.py (the only files of tests/ it
needs), the public and hidden
fixtures (each holds its tolerance), pyproject.toml, uv.lock and README.md (the project's readme).

run_autograder reads CS336_AUTOGRADER_ROOT (default /autograder), CS336_AUTOGRADER_SOURCE
(default $CS336_AUTOGRADER_ROOT/source) and CS336_PYTHON (default the bundle's .venv), so a
test can run it against a fake Gradescope layout with the current environment.
"""

import zipfile
from pathlib import Path

from cs336_basics import REPO
from cs336_basics.staff.grader.cases import graded_cases
from cs336_basics.staff.grader.config import DEFAULT_CONFIG, load_config

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, to build the autograder image; the bundle is in /autograder/source.
set -euo pipefail
SOURCE="${CS336_AUTOGRADER_SOURCE:-/autograder/source}"
export UV_PYTHON_INSTALL_DIR=/opt/uv-python  # not under /root: the grading workers must read Python
if ! command -v uv >/dev/null 2>&1; then
    curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=/usr/local/bin UV_NO_MODIFY_PATH=1 sh
fi
cd "$SOURCE"
# The locked runtime dependencies only: the grader needs no dev tools, and the project itself is
# imported from this directory. Bytecode is compiled now so that each grading starts fast.
uv sync --locked --no-dev --no-install-project --compile-bytecode
""" + (
    PERMISSIONS_SH := """# Workers run student code as an unprivileged user inside a mount namespace that hides this
# directory; where there are no namespaces (a container without CAP_SYS_ADMIN: isolation level
# "container"), permissions hide it: the environment stays readable, the reference, the staff
# tools and the fixtures do not.
chmod 711 "$SOURCE"
chmod -R go-rwx "$SOURCE/cs336_basics" "$SOURCE/tests" "$SOURCE/fixtures" "$SOURCE/hidden_fixtures"
if [ -d "$SOURCE/.venv" ]; then chmod -R a+rX "$SOURCE/.venv"; fi
if [ -d /opt/uv-python ]; then chmod -R a+rX /opt/uv-python; fi
"""
)

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: grade /autograder/submission (the student's upload:
# their handout directory, or a zip of it) into /autograder/results/results.json.
set -uo pipefail
AUTOGRADER="${CS336_AUTOGRADER_ROOT:-/autograder}"
SOURCE="${CS336_AUTOGRADER_SOURCE:-$AUTOGRADER/source}"
PYTHON="${CS336_PYTHON:-$SOURCE/.venv/bin/python}"
mkdir -p "$AUTOGRADER/results"
cd "$SOURCE"  # `python -m` imports cs336_basics from here: the bundle's grader, not a student's
exec "$PYTHON" -m cs336_basics.staff.cli grade "$AUTOGRADER/submission" --results "$AUTOGRADER/results/results.json"
"""


def bundle_files(repo: Path = REPO) -> list[Path]:
    """Paths, relative to repo, of the source files the bundle carries: everything from `repo`."""
    repo = Path(repo)
    config = load_config(repo / DEFAULT_CONFIG.relative_to(REPO))
    cases = graded_cases(config.components, repo / "fixtures", repo / "hidden_fixtures")
    package = [
        p
        for p in sorted((repo / "cs336_basics").rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]
    top = [repo / name for name in ("pyproject.toml", "uv.lock", "README.md")]
    fixtures = sorted({c.path for c in cases})
    adapters = [repo / "tests" / "adapters.py", repo / "tests" / "adapter_checks.py"]
    return [p.relative_to(repo) for p in top + package + adapters + fixtures]


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.create_system = 3  # Unix: unzip honours the mode bits
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_bundle(out_zip: Path, repo: Path = REPO) -> Path:
    """Write the autograder zip: setup.sh and run_autograder (executable) at the top, then the files."""
    out_zip = Path(out_zip)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out_zip, "w") as archive:
        _add(archive, "setup.sh", SETUP_SH.encode(), 0o755)
        _add(archive, "run_autograder", RUN_AUTOGRADER.encode(), 0o755)
        for rel in bundle_files(repo):
            _add(archive, rel.as_posix(), (repo / rel).read_bytes(), 0o644)
    return out_zip
