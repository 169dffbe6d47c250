"""Find a submission's `cs336_basics` package and copy it, and nothing else, into the sandbox.

A submission is a directory (a handout the student filled in, or Gradescope's
/autograder/submission) or a zip of one. Zips are extracted with every member checked: no
absolute paths, no `..`, no symlinks, bounded size and count. Copies never follow symlinks
(a link to /autograder/source/hidden_fixtures would otherwise be copied in by the root grader).
"""

import os
import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

PACKAGE = "cs336_basics"
MAX_FILES = 2000
MAX_BYTES = 50 * 2**20  # 50 MB: the package is ~100 kB


class SubmissionError(Exception):
    """A problem with the submission itself; the message is shown to the student."""


def extract_zip(zip_path: Path, dest: Path) -> Path:
    """Extract zip_path into dest (created) and return dest; unsafe members raise SubmissionError."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as e:
        raise SubmissionError(f"could not open the zip file {Path(zip_path).name}: {e}") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_FILES:
            raise SubmissionError(f"the zip holds {len(members)} files; at most {MAX_FILES} are accepted")
        if sum(m.file_size for m in members) > MAX_BYTES:
            raise SubmissionError(f"the zip unpacks to more than {MAX_BYTES // 2**20} MB")
        for m in members:
            name = PurePosixPath(m.filename.replace("\\", "/"))
            if name.is_absolute() or ".." in name.parts or (name.parts and ":" in name.parts[0]):
                raise SubmissionError(f"unsafe path in the zip: {m.filename!r}")
            if stat.S_ISLNK(m.external_attr >> 16):
                raise SubmissionError(f"symbolic links are not accepted in the zip: {m.filename!r}")
            target = dest.joinpath(*name.parts)
            if m.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(m) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
            except Exception as e:  # noqa: BLE001 - encrypted, unsupported or corrupt members raise many types
                raise SubmissionError(f"could not extract {m.filename!r} from the zip: {type(e).__name__}: {e}") from None
    return dest


def find_package(root: Path) -> Path:
    """The shallowest `cs336_basics/` holding an `__init__.py` under root (symlinks not followed)."""
    root = Path(root)
    best = None
    for here, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        here = Path(here)
        if here.name == PACKAGE and "__init__.py" in files and not (here / "__init__.py").is_symlink():
            depth = len(here.relative_to(root).parts)
            if best is None or depth < best[0]:
                best = (depth, here)
            dirs[:] = []
    if best is None:
        raise SubmissionError(f"no {PACKAGE}/ package (a folder with __init__.py) in the submission")
    return best[1]


def copy_package(src: Path, dest: Path) -> int:
    """Copy the regular files of package src to dest (no symlinks, no __pycache__); returns the count."""
    src, dest = Path(src), Path(dest)
    count, total = 0, 0
    for here, dirs, files in os.walk(src, followlinks=False):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(here, d))]
        out_dir = dest / Path(here).relative_to(src)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in files:
            path = os.path.join(here, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            count, total = count + 1, total + info.st_size
            if count > MAX_FILES or total > MAX_BYTES:
                raise SubmissionError(f"{PACKAGE}/ is too large (more than {MAX_FILES} files or {MAX_BYTES // 2**20} MB)")
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f, open(out_dir / name, "wb") as out:
                shutil.copyfileobj(f, out)
    return count


def unpack(submission: Path, scratch: Path) -> Path:
    """The submission's package directory: in the directory, in the zip (extracted to scratch), or in
    the only zip file of a directory that holds no package."""
    submission = Path(submission)
    if submission.is_file() and zipfile.is_zipfile(submission):
        return find_package(extract_zip(submission, scratch))
    if not submission.is_dir():
        raise SubmissionError(f"{submission.name}: expected a directory or a .zip file")
    try:
        return find_package(submission)
    except SubmissionError:
        zips = sorted(p for p in submission.iterdir() if p.suffix.lower() == ".zip" and p.is_file() and not p.is_symlink())
        if len(zips) != 1:  # an uploaded zip Gradescope did not unpack
            raise
        return find_package(extract_zip(zips[0], scratch))
