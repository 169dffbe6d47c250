"""`cs336 submit`: write submission.zip, the file to upload to Gradescope, and show where you stand.

The zip holds your `cs336_basics/` package and nothing else: no caches (`__pycache__/`, `*.pyc`),
no hidden files, no virtualenv, no tests, fixtures or the course's corpus (the grader uses its own copies). It is
written first; then the tests run once for the `cs336 status` table, and every component that
still fails is named. The limits below are the grader's (it reads them from here), set roughly
ten times above a complete package (`cs336 submit` prints its file count and size).
"""

import os
import stat
import sys
import zipfile
from pathlib import Path

from cs336_basics import COMPONENTS, REPO
from cs336_basics.atomic_write import atomic_open

PACKAGE = "cs336_basics"
ZIP_NAME = "submission.zip"
MAX_PACKAGE_FILES = 500  # files in cs336_basics/ (caches and hidden files not counted)
MAX_PACKAGE_BYTES = 5 * 2**20  # their total size, 5 MB
# What the grader tells a student whose upload it cannot grade.
WHAT_TO_SUBMIT = (
    f"Submit the {ZIP_NAME} that `uv run cs336 submit` writes: it holds only your {PACKAGE}/ package "
    f"(at most {MAX_PACKAGE_FILES} files and {MAX_PACKAGE_BYTES // 2**20} MB; no .venv, .git, caches, tests or fixtures)."
)
STAFF = Path(PACKAGE, "staff")  # the course staff's tools: in their repository only, never submitted
# The course's corpus (cs336_basics/corpus/data/): given data, never submitted nor graded (the
# grader leaves it out of any upload too)
GIVEN_DATA = ("corpus", "data")


def given_data(parts: tuple[str, ...]) -> bool:
    """Whether a path inside the package (its parts after cs336_basics/) lies in the given data."""
    return tuple(parts[: len(GIVEN_DATA)]) == GIVEN_DATA


def skipped(name: str) -> bool:
    """A file or folder name inside the package that is never submitted nor graded:
    hidden files and folders (.DS_Store, .ipynb_checkpoints), caches, compiled bytecode."""
    return name.startswith(".") or name == "__pycache__" or name.endswith((".pyc", ".pyo"))


def package_files(root: Path = REPO) -> tuple[list[Path], list[Path]]:
    """(the files to submit, the symbolic links left out), relative to root, in a fixed order.
    Links are never followed: the grader accepts none."""
    root, files, links = Path(root), [], []
    for here, dirs, names in os.walk(root / PACKAGE, followlinks=False):
        here = Path(here)
        for d in list(dirs):
            if os.path.islink(here / d):
                links.append((here / d).relative_to(root))
        dirs[:] = sorted(
            d
            for d in dirs
            if not skipped(d)
            and not os.path.islink(here / d)
            and (here / d).relative_to(root) != STAFF
            and not given_data((here / d).relative_to(root / PACKAGE).parts)
        )
        for name in sorted(names):
            info = os.lstat(here / name)
            if stat.S_ISLNK(info.st_mode):
                links.append((here / name).relative_to(root))
            elif stat.S_ISREG(info.st_mode) and not skipped(name):
                files.append((here / name).relative_to(root))
    return files, links


def write_submission(
    root: Path = REPO, out: Path | None = None, entry: dict[str, bytes] | None = None
) -> tuple[Path, list[Path], list[Path]]:
    """Write root/submission.zip (or out) holding root's package, and the leaderboard entry's files
    (cs336_basics/leaderboard.py) in leaderboard/ if given; returns (zip, files, links left out).
    Raises ValueError, writing nothing, when the package is missing or over the grader's limits."""
    root = Path(root)
    out = Path(out) if out is not None else root / ZIP_NAME
    if not (root / PACKAGE / "__init__.py").is_file():
        raise ValueError(f"no {PACKAGE}/__init__.py in {root}: run `uv run cs336 submit` in your assignment folder")
    files, links = package_files(root)
    sizes = {rel: (root / rel).stat().st_size for rel in files}
    total = sum(sizes.values())
    if len(files) > MAX_PACKAGE_FILES or total > MAX_PACKAGE_BYTES:
        largest = ", ".join(
            f"{rel} ({size / 1e3:.0f} kB)" for rel, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
        )
        raise ValueError(
            f"{PACKAGE}/ holds {len(files)} files, {total / 2**20:.1f} MB; the grader accepts at most "
            f"{MAX_PACKAGE_FILES} files and {MAX_PACKAGE_BYTES // 2**20} MB. Largest: {largest}"
        )
    with atomic_open(out, "wb") as f, zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel in files:
            archive.write(root / rel, rel.as_posix())
        for name, data in (entry or {}).items():
            archive.writestr(f"leaderboard/{name}", data)
    return out, files, links


def _leaderboard_entry(run_dir: str) -> dict[str, bytes]:
    """The run's entry (its weights, config and tokenizer), checked as the grader checks it."""
    from cs336_basics.leaderboard import MAX_PARAMETERS, WEIGHTS, entry_files

    entry = entry_files(run_dir)
    print(f"leaderboard entry from {run_dir}: {WEIGHTS} {len(entry[WEIGHTS]) / 1e6:.1f} MB "
          f"(at most {MAX_PARAMETERS:,} float32 parameters, {4 * MAX_PARAMETERS / 1e6:.0f} MB)")  # fmt: skip
    return entry


def red_components(table: dict) -> list[str]:
    """A warning line per component that has failing tests, or no tests at all."""
    warnings = []
    for component in COMPONENTS:
        row = table.get(component)
        if row is None or row.total == 0:
            warnings.append(f"warning: {component}: no test ran")
        elif row.failed:
            warnings.append(f"warning: {component}: {row.failed} of {row.total} tests fail: {row.first_failure}")
    return warnings


def run(args) -> int:
    try:
        checkpoint = getattr(args, "checkpoint", None)  # callers that predate --checkpoint pass none
        entry = _leaderboard_entry(checkpoint) if checkpoint else None
        out, files, links = write_submission(REPO, Path(args.output) if args.output else None, entry)
    except (ValueError, FileNotFoundError) as e:
        print(f"cs336 submit: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    for link in links:
        print(f"left out {link}: a symbolic link (the grader accepts none; copy the file instead)")
    size = out.stat().st_size
    print(f"wrote {out} ({len(files)} files of {PACKAGE}/, {size / 1e3:.1f} kB): upload this file to Gradescope")
    if args.no_tests:
        return 0
    print("running the tests for the status table (Ctrl-C skips them; the zip is already written) ...", flush=True)
    from cs336_basics import status

    try:
        table = status.run_tests(REPO / "tests", [])
    except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - the zip is written either way
        print(
            f"could not show the status table ({type(e).__name__}: {e}); {out.name} is written all the same. "
            "Run `uv run pytest` to see why."
        )
        return 0
    print(status.format_table(table))
    warnings = red_components(table)
    print("\n".join(warnings) if warnings else "every component passes its tests")
    if warnings:
        print(
            f"{out.name} is written all the same: the grader gives points per component, so submitting "
            "what works now is fine, and you can submit again later."
        )
    return 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_dir

    p = commands.add_parser("submit", help=f"write {ZIP_NAME} (your {PACKAGE}/ package only) and show the status table")
    p.add_argument("--output", "-o", help=f"where to write the zip (default: {ZIP_NAME} in the assignment folder)")
    p.add_argument("--no-tests", action="store_true", help="write the zip only; skip the status table")
    p.add_argument(
        "--checkpoint",
        metavar="DIR",
        type=input_dir,
        help="a cs336 train run directory: its weights enter the leaderboard",
    )
    p.set_defaults(run=run)
