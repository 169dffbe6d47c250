"""Find a submission's `cs336_basics` package and copy it, and nothing else, into the sandbox.

A submission is a directory (a handout the student filled in, or Gradescope's
/autograder/submission) or a zip of one: ideally the submission.zip of `cs336 submit`, often
the whole assignment folder, .venv, .git and caches included, sometimes under a top folder.
The package is the shallowest `cs336_basics/` holding an `__init__.py`, at most MAX_DEPTH
folders down; virtualenvs (a folder with pyvenv.cfg, site-packages), hidden folders (.venv,
.git, .pytest_cache), __pycache__ and __MACOSX are never entered, in a folder or in a zip.
Only the package's members are extracted, minus caches and hidden files, within the limits of
cs336_basics/submit.py (what `cs336 submit` checks too); every member's name is checked (no
absolute paths, no `..`), and links inside the package are refused. Copies never follow symlinks
(a link to /autograder/source/hidden_fixtures would otherwise be copied in by the root grader).
A problem raises SubmissionError, whose message ends by saying what to submit instead.
"""

import os
import shutil
import stat
import struct
import zipfile
from pathlib import Path

from cs336_basics.submit import MAX_PACKAGE_BYTES, MAX_PACKAGE_FILES, PACKAGE, WHAT_TO_SUBMIT, given_data, skipped

MAX_DEPTH = 4  # the package's folder lies at most this many folders below the submission's top
MAX_DIRS_SCANNED = 20_000  # folders listed while looking for it in a directory submission
# A zip is listed, never extracted, outside the package. A whole assignment folder with its real
# .venv (torch included) is ~40,000 files and well over 1 GB: refused, with WHAT_TO_SUBMIT.
MAX_ARCHIVE_BYTES = 2**30  # the zip file itself, 1 GB
MAX_ARCHIVE_LISTING = 64 * 2**20  # its central directory (the member list), 64 MB: ~500,000 short names
IGNORED_DIRS = {"__pycache__", "__MACOSX", "site-packages", "node_modules"}


class SubmissionError(Exception):
    """A problem with the submission itself; the message, shown to the student, says what to submit."""

    def __init__(self, reason: str):
        super().__init__(f"{reason.rstrip('. ')}. {WHAT_TO_SUBMIT}")


def _ignored(name: str) -> bool:
    """A folder never searched for the package: hidden (.venv, .git), a cache, a virtualenv's."""
    return name.startswith(".") or name in IGNORED_DIRS


def _too_large(files: int, size: int) -> SubmissionError:
    return SubmissionError(
        f"{PACKAGE}/ holds more than {MAX_PACKAGE_FILES} files or {MAX_PACKAGE_BYTES // 2**20} MB "
        f"(found at least {files} files, {size / 2**20:.1f} MB)"
    )


# ------------------------------------------------------------------ zip submissions


def _central_directory(zip_path: Path) -> tuple[int, int] | None:
    """(members declared, bytes of the member list) from the zip's end records, read before
    zipfile parses the whole list (which costs memory per member); None if there is no end record."""
    with open(zip_path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - (22 + 65535 + 20)))  # end record + longest comment + zip64 locator
        tail = f.read()
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or len(tail) < i + 22:
            return None
        entries, listing = struct.unpack("<HI", tail[i + 10 : i + 16])
        if (entries == 0xFFFF or listing == 0xFFFFFFFF) and i >= 20 and tail[i - 20 : i - 16] == b"PK\x06\x07":
            f.seek(struct.unpack("<Q", tail[i - 12 : i - 4])[0])
            record = f.read(56)
            if record[:4] == b"PK\x06\x06" and len(record) == 56:
                entries, listing = struct.unpack("<QQ", record[32:48])
    return entries, listing


def _open_zip(zip_path: Path) -> zipfile.ZipFile:
    zip_path = Path(zip_path)
    name = zip_path.name
    try:
        size = zip_path.stat().st_size
        if size > MAX_ARCHIVE_BYTES:
            raise SubmissionError(
                f"{name} is {size / 2**20:.0f} MB; the grader opens zips of at most {MAX_ARCHIVE_BYTES // 2**20} MB"
            )
        listing = _central_directory(zip_path)
        if listing is not None and listing[1] > MAX_ARCHIVE_LISTING:
            raise SubmissionError(
                f"{name} lists {listing[0]} files ({listing[1] / 2**20:.0f} MB of names); "
                f"the grader reads member lists of at most {MAX_ARCHIVE_LISTING // 2**20} MB"
            )
        return zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as e:
        raise SubmissionError(f"could not open the zip file {name}: {e}") from None


def _member_path(m: zipfile.ZipInfo) -> tuple[str, ...]:
    """The member's path as parts; absolute paths, `..` and drive letters raise SubmissionError."""
    name = m.filename.replace("\\", "/")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        raise SubmissionError(f"unsafe path in the zip: {m.filename!r}")
    return parts


def _extract(archive: zipfile.ZipFile, chosen: list[tuple[zipfile.ZipInfo, tuple[str, ...]]], dest: Path) -> None:
    files = [m for m, _ in chosen if not m.is_dir()]
    total = sum(m.file_size for m in files)  # zipfile never inflates a member past its file_size
    if len(files) > MAX_PACKAGE_FILES or total > MAX_PACKAGE_BYTES:
        raise _too_large(len(files), total)
    for m, name in chosen:
        if stat.S_ISLNK(m.external_attr >> 16):
            raise SubmissionError(f"symbolic links are not accepted in the zip: {m.filename!r}")
        target = dest.joinpath(*name)
        if m.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(m) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
        except Exception as e:  # noqa: BLE001 - encrypted, unsupported or corrupt members raise many types
            raise SubmissionError(f"could not extract {m.filename!r} from the zip: {type(e).__name__}: {e}") from None


def extract_zip(zip_path: Path, dest: Path) -> Path:
    """Extract every member of the zip into dest (created) and return dest: the checks of
    extract_package (names, links, the package limits), without looking for the package."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with _open_zip(zip_path) as archive:
        _extract(archive, [(m, _member_path(m)) for m in archive.infolist()], dest)
    return dest


def _package_prefix(members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]]) -> tuple[str, ...]:
    """The folders above the shallowest cs336_basics/__init__.py of the zip, outside ignored folders."""
    venvs = {p[:-1] for _, p in members if p and p[-1] == "pyvenv.cfg"}
    found = sorted(
        {
            p[:-2]
            for m, p in members
            if len(p) >= 2
            and p[-2:] == (PACKAGE, "__init__.py")
            and not m.is_dir()
            and len(p) - 2 <= MAX_DEPTH
            and not any(_ignored(d) for d in p[:-1])
            and not any(p[:k] in venvs for k in range(len(p) - 1))
        },
        key=lambda prefix: (len(prefix), prefix),
    )
    if not found:
        raise SubmissionError(
            f"no {PACKAGE}/ package (a folder with __init__.py) in the zip, outside .venv and "
            f"other hidden folders, at most {MAX_DEPTH} folders down"
        )
    shallowest = [prefix for prefix in found if len(prefix) == len(found[0])]
    if len(shallowest) > 1:
        where = ", ".join("/".join((*prefix, PACKAGE)) for prefix in shallowest[:3])
        raise SubmissionError(
            f"the zip holds more than one {PACKAGE}/ package ({where}); the grader cannot tell which to grade"
        )
    return found[0]


def extract_package(zip_path: Path, dest: Path) -> Path:
    """Extract the zip's package, without caches and hidden files, to dest; returns dest/<prefix>/cs336_basics.
    Every member's name is checked; no other member is read."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with _open_zip(zip_path) as archive:
        members = [(m, _member_path(m)) for m in archive.infolist()]
        prefix = (*_package_prefix(members), PACKAGE)
        n = len(prefix)
        chosen = [
            (m, p)
            for m, p in members
            if p[:n] == prefix and len(p) > n and not any(skipped(d) for d in p[n:]) and not given_data(p[n:])
        ]
        _extract(archive, chosen, dest)
    return dest.joinpath(*prefix)


# ------------------------------------------------------------------ directory submissions


def _is_package(path: Path) -> bool:
    """A real folder (not a link) holding a regular __init__.py (not a link)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode) and stat.S_ISREG(os.lstat(path / "__init__.py").st_mode)
    except OSError:
        return False


def find_package(root: Path) -> Path:
    """The shallowest `cs336_basics/` holding an `__init__.py` under root, breadth first, at most
    MAX_DEPTH folders down, never entering ignored folders, virtualenvs or symlinks."""
    level, scanned = [Path(root)], 0
    for _ in range(MAX_DEPTH + 1):
        found = [d / PACKAGE for d in level if _is_package(d / PACKAGE)]
        if len(found) > 1:
            where = ", ".join(str(p.relative_to(root)) for p in found[:3])
            raise SubmissionError(
                f"the submission holds more than one {PACKAGE}/ package ({where}); "
                "the grader cannot tell which to grade"
            )
        if found:
            return found[0]
        below = []
        for d in level:
            scanned += 1
            if scanned > MAX_DIRS_SCANNED:
                raise SubmissionError(
                    f"no {PACKAGE}/ package among the first {MAX_DIRS_SCANNED} folders of the submission"
                )
            try:
                with os.scandir(d) as entries:
                    subdirs = sorted(
                        e.name for e in entries if e.is_dir(follow_symlinks=False) and not _ignored(e.name)
                    )
            except OSError:
                continue
            below += [d / name for name in subdirs if name != PACKAGE and not (d / name / "pyvenv.cfg").exists()]
        level = below
    raise SubmissionError(
        f"no {PACKAGE}/ package (a folder with __init__.py) in the submission, outside .venv and "
        f"other hidden folders, at most {MAX_DEPTH} folders down"
    )


def copy_package(src: Path, dest: Path) -> int:
    """Copy the regular files of package src to dest (no symlinks, caches or hidden files); returns the count."""
    src, dest = Path(src), Path(dest)
    count, total = 0, 0
    for here, dirs, files in os.walk(src, followlinks=False):
        inside = Path(here).relative_to(src)
        dirs[:] = [
            d
            for d in dirs
            if not skipped(d) and not os.path.islink(os.path.join(here, d)) and not given_data((inside / d).parts)
        ]
        out_dir = dest / inside
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in files:
            if skipped(name):
                continue
            path = os.path.join(here, name)
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                continue
            count, total = count + 1, total + info.st_size
            if count > MAX_PACKAGE_FILES or total > MAX_PACKAGE_BYTES:
                raise _too_large(count, total)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f, open(out_dir / name, "wb") as out:
                shutil.copyfileobj(f, out)
    return count


def submissions_in(directory: Path) -> list[Path]:
    """Subdirectories and .zip files of directory, by name; names starting with '.' are skipped."""
    found = [p for p in sorted(Path(directory).iterdir()) if not p.name.startswith(".")]
    return [p for p in found if p.is_dir() or p.suffix.lower() == ".zip"]


def unpack(submission: Path, scratch: Path) -> Path:
    """The submission's package directory: in the directory, in the zip (extracted to scratch), or in
    the only zip file of a directory that holds no package."""
    submission = Path(submission)
    if submission.is_file() and zipfile.is_zipfile(submission):
        return extract_package(submission, scratch)
    if not submission.is_dir():
        raise SubmissionError(f"{submission.name}: expected a directory or a .zip file")
    try:
        return find_package(submission)
    except SubmissionError:
        zips = sorted(
            p for p in submission.iterdir() if p.suffix.lower() == ".zip" and p.is_file() and not p.is_symlink()
        )
        if len(zips) != 1:  # an uploaded zip Gradescope did not unpack
            raise
        return extract_package(zips[0], scratch)
