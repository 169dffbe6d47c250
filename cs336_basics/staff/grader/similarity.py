"""Which submissions are too alike: pairwise similarity of what the students wrote.

    written_code(package_dir, given)  -> what one submission adds to the handout: the lines of its
                                         package's files that the handout's do not have
    compare(written, against, work)   -> Similarity: every pair's scores, each student's closest match
    similarity_report(directory, out) -> the same for a directory of submissions, and the report files

The matcher is copydetect (PyPI, MIT, maintained): MOSS's winnowing fingerprints (Schleimer,
Wilkerson and Aiken 2003), offline, over Pygments tokens (names become V/F/O, strings S; comments
and whitespace vanish), so renamed variables, reformatting, added comments and reordered functions
leave the fingerprints of each piece of code unchanged; it has a boilerplate option and writes its
own HTML report with the matching regions side by side. Its dependencies (numpy, matplotlib,
jinja2, pygments, tqdm) were already ours. (Dolos and JPlag are Node and Java programs; MOSS is a
web service; pycode_similar compares ASTs of two files and writes no report.)

The rule. What a student wrote is what their files add to the handout's (a line diff: the solution
regions in place of their stubs, and any other edit); the handout's given code, every shipped file
with its solution regions stubbed, is also copydetect's boilerplate, so given code a student moved
still counts for nothing. A fingerprint is a hash of K_GRAM consecutive characters of the token
text; winnowing keeps the smallest of each GUARANTEE - K_GRAM + 1 consecutive ones (fewer
fingerprints: the time and memory of a cohort's pairs), so any shared run of GUARANTEE characters
is found, shorter ones by chance (the same ones in every run: fingerprints.py hashes k-grams with
BLAKE2b where copydetect uses Python's per-process salted hash()). A's similarity to B is the fraction of A's tokens inside a fingerprint that B
shares; a pair's score is the larger of its two directions (a partial submission copied whole
scores 1). Similarity is evidence for a person to review; it never changes a grade.
"""

import csv
import difflib
import functools
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cs336_basics import REPO
from cs336_basics.atomic_write import atomic_open
from cs336_basics.cli_errors import UsageError
from cs336_basics.staff.grader.similarity_html import write_html
from cs336_basics.staff.handout import PACKAGE, shipped_files, stub_text
from cs336_basics.submit import skipped

K_GRAM = 25  # copydetect's noise threshold: the shortest match (in token characters) that counts
GUARANTEE = 35  # copydetect's guarantee threshold: a shared run this long is always found
# Between the lowest score of a copy (exact, renamed, reordered, commented) and the highest of an
# independent solution of the same kernels, far from both: copies.small_set's pairs, printed by
# `benchmarks/similarity.py --separation` and checked by tests/staff/test_similarity.py.
THRESHOLD = 0.5
# A pair is flagged only if it also shares this much token text (characters of copydetect's
# filtered code, where a name is one character): a few guaranteed matches' worth. Below it the
# shared code is a statement or two, the idioms small submissions write alike, where a score (a
# fraction of a small submission) says little; a copied kernel shares many times more (copies.
# small_set's pairs, printed with their shared tokens by `benchmarks/similarity.py --separation`).
MIN_SHARED_TOKENS = 3 * GUARANTEE
TOP_PAIRS = 50  # pairs shown side by side in the HTML report


@dataclass(frozen=True)
class Pair:
    """Two submissions and how much of each one's own code the other shares (fractions of tokens)."""

    first: str
    second: str
    first_in_second: float
    second_in_first: float
    shared_tokens: int

    @property
    def score(self) -> float:
        return max(self.first_in_second, self.second_in_first)

    def flagged(self, threshold: float = THRESHOLD) -> bool:
        """Whether the pair is listed for review: its score reaches threshold and it shares at
        least MIN_SHARED_TOKENS."""
        return self.score >= threshold and self.shared_tokens >= MIN_SHARED_TOKENS


@dataclass(frozen=True)
class Closest:
    """A submission's highest pair score and with whom."""

    score: float
    other: str


@dataclass
class Similarity:
    """What compare found."""

    pairs: list[Pair]  # every compared pair, highest score first
    closest: dict[str, Closest]  # per submission; absent where nothing it wrote matched
    detector: object  # the copydetect.CopyDetector that compared them (writes the HTML report)
    names: dict[str, str]  # the detector's file path -> submission name


def given_code(reference_dir: Path = REPO) -> dict[str, str]:
    """The handout's package: path (relative to the package's parent) -> text, solution regions stubbed."""
    files = [p for p in shipped_files(reference_dir) if p.parts[0] == PACKAGE and p.suffix == ".py"]
    return {p.as_posix(): stub_text(Path(reference_dir) / p) for p in files}


def changed_lines(given: str, text: str) -> str:
    """The lines of text that the handout's given text does not have where text has them (a line
    diff, difflib's): a solution region's lines in place of its stub, and any other edit."""
    ours, theirs = given.splitlines(keepends=True), text.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    return "".join(
        "".join(theirs[j1:j2]) for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert")
    )


def written_code(package_dir: Path, given: dict[str, str]) -> str:
    """What a submission's package adds to the handout's: each .py file's changed lines (a new file's
    every line), in path order, each file after a comment naming it (comments carry no fingerprints)."""
    package_dir, parts = Path(package_dir), []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent)
        if any(skipped(p) for p in rel.parts) or path.is_symlink() or not path.is_file():
            continue  # what the grader leaves out (read_written's copy has none of it)
        own = changed_lines(given.get(rel.as_posix(), ""), path.read_text(encoding="utf-8", errors="replace"))
        if own.strip():
            parts.append(f"# ===== {rel.as_posix()}\n{own}")
    return "".join(parts)


def _file_name(name: str) -> str:
    """A submission's name as a file name the report can show as it is: only [A-Za-z0-9._-]."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "_"


def _write_documents(written: dict[str, str], folder: Path) -> dict[str, str]:
    """Each submission's written code to folder/<name>.py; returns path -> submission name."""
    if written:
        folder.mkdir(parents=True, exist_ok=True)
    paths, used = {}, set()
    for name, text in written.items():
        stem = _file_name(name)
        while stem in used:
            stem += "_"
        used.add(stem)
        path = folder / f"{stem}.py"
        path.write_text(text, encoding="utf-8")
        paths[str(path)] = name
    return paths


def _fingerprint(detector) -> None:
    """The fingerprints of every file, boilerplate removed, into detector.file_data (as copydetect's
    run() does: the boilerplate's every k-gram, each file's winnowed ones), hashed the same way in
    every process (fingerprints.py)."""
    import numpy as np

    from cs336_basics.staff.grader.fingerprints import fingerprint

    conf = detector.conf
    given = [fingerprint(f, conf.noise_t, 1) for f in detector.boilerplate_files]
    boilerplate = np.unique(np.array([h for g in given for h in g.hashes], dtype=np.int64))
    for f in dict.fromkeys(detector.test_files + detector.ref_files):
        detector.file_data[f] = fingerprint(f, conf.noise_t, conf.window_size, boilerplate)


def _score(detector) -> None:
    """copydetect's compare_files on each pair once, into detector.similarity_matrix (test file,
    reference file, (test's fraction, reference's fraction)) and token_overlap_matrix, as its run()
    does, without keeping every pair's matching slices (memory growing with the pairs): the
    report recomputes them for the pairs it shows."""
    import numpy as np
    from copydetect.detector import compare_files

    tests, refs = detector.test_files, detector.ref_files
    row, column = {f: i for i, f in enumerate(tests)}, {f: j for j, f in enumerate(refs)}
    detector.similarity_matrix = np.full((len(tests), len(refs), 2), -1.0)
    detector.token_overlap_matrix = np.full((len(tests), len(refs)), -1)
    for i, test_f in enumerate(tests):
        for j, ref_f in enumerate(refs):
            if test_f == ref_f:
                continue
            if row.get(ref_f, len(tests)) < i:  # compared as (ref_f, test_f) already
                mirror = row[ref_f], column[test_f]
                detector.similarity_matrix[i, j] = detector.similarity_matrix[mirror][::-1]
                detector.token_overlap_matrix[i, j] = detector.token_overlap_matrix[mirror]
                continue
            tokens, sims, _ = compare_files(detector.file_data[test_f], detector.file_data[ref_f])
            detector.similarity_matrix[i, j], detector.token_overlap_matrix[i, j] = sims, tokens


def _code_list(detector, shown: list[tuple[int, int]]) -> list:
    """copydetect's get_copied_code_list for the pairs in `shown` (test file index, reference file
    index) only: its own lists and highlights every pair above the display threshold (all 19,900
    pairs of 200 copies)."""
    from copydetect.detector import compare_files
    from copydetect.utils import highlight_overlap

    rows = []
    for i, j in shown:
        test_f, ref_f = detector.test_files[i], detector.ref_files[j]
        _, _, slices = compare_files(detector.file_data[test_f], detector.file_data[ref_f])
        code = []
        for f, where, colour in ((test_f, slices[0], "red"), (ref_f, slices[1], "green")):
            hl = (f"<span class='highlight-{colour}'>", "</span>")
            code.append(highlight_overlap(detector.file_data[f].raw_code, where, *hl, 10, True)[0])
        sims = detector.similarity_matrix[i, j]
        rows.append([sims[0], sims[1], test_f, ref_f, *code, detector.token_overlap_matrix[i, j]])
    return rows


# Without network the report's Bootstrap (linked from a CDN) is missing: this keeps the matched
# regions side by side (and shown; Bootstrap, where it loads, collapses them behind a button).
OFFLINE_CSS = ".row { display: flex; gap: 1em; } .col { flex: 1 1 0; min-width: 0; overflow-x: auto; }\n"


def compare(
    written: dict[str, str], against: dict[str, str], work: Path, threshold: float = THRESHOLD, top: int = TOP_PAIRS
) -> Similarity:
    """Every pair of `written` (name -> code), and each of them against each of `against` (named
    against/<name> in the results), fingerprinted with the handout's given code as boilerplate. The
    documents go to work/written/ and work/against/; `top` pairs are kept for the HTML report."""
    work = Path(work)
    tested = _write_documents(written, work / "written")
    references = _write_documents({f"against/{n}": text for n, text in against.items()}, work / "against")
    boilerplate = work / "given" / "handout.py"
    boilerplate.parent.mkdir(parents=True, exist_ok=True)
    boilerplate.write_text("".join(f"# ===== {rel}\n{text}\n" for rel, text in given_code().items()))
    (work / "report.css").write_text(OFFLINE_CSS)
    from copydetect import CopyDetector

    detector = CopyDetector(
        **dict(noise_t=K_GRAM, guarantee_t=GUARANTEE, display_t=threshold, force_language="python"),
        **dict(autoopen=False, silent=True, out_file=str(work / "report.html"), css_files=["report.css"]),
    )
    for path in tested:
        detector.add_file(path, "testref")
    for path in references:
        detector.add_file(path, "ref")
    detector.add_file(str(boilerplate), "boilerplate")
    _fingerprint(detector)
    _score(detector)
    names = tested | references
    pairs, where = _pairs(detector, names)
    shown = [where[p] for p in pairs[:top] if p.shared_tokens > 0]
    detector.get_copied_code_list = functools.partial(_code_list, detector, shown)  # what the report shows
    return Similarity(pairs, _closest(pairs, set(written)), detector, names)


def _pairs(detector, names: dict[str, str]) -> tuple[list[Pair], dict[Pair, tuple[int, int]]]:
    """Each compared pair once (test files among themselves, and each against every reference-only
    file), highest score first, with where it sits in the detector's matrices."""
    where, seen = {}, set()
    for i, test_f in enumerate(detector.test_files):
        for j, ref_f in enumerate(detector.ref_files):
            sims = detector.similarity_matrix[i, j]
            if test_f == ref_f or sims[0] < 0 or frozenset((test_f, ref_f)) in seen:
                continue
            seen.add(frozenset((test_f, ref_f)))
            pair = Pair(
                names[test_f], names[ref_f], float(sims[0]), float(sims[1]), int(detector.token_overlap_matrix[i, j])
            )
            where[pair] = (i, j)
    return sorted(where, key=lambda p: (-p.score, p.first, p.second)), where


def _closest(pairs: list[Pair], graded: set[str]) -> dict[str, Closest]:
    """Each graded submission's highest pair score (pairs come highest first) and with whom."""
    best: dict[str, Closest] = {}
    for p in pairs:
        for me, other in ((p.first, p.second), (p.second, p.first)):
            if me in graded and me not in best and p.score > 0:
                best[me] = Closest(p.score, other)
    return best


def read_written(directory: Path, given: dict[str, str], echo=print) -> dict[str, str]:
    """Each submission of directory (as `cs336 grade-all` finds them: subdirectories and .zip files)
    -> its written code. Its package is copied as the grader copies it (its limits on files and
    bytes, no links followed); one the grader would refuse is skipped with a line saying why."""
    from cs336_basics.staff.grader.submission import SubmissionError, copy_package, submissions_in, unpack

    written = {}
    for sub in submissions_in(directory):
        with tempfile.TemporaryDirectory(prefix="cs336-similarity-") as scratch:
            try:
                package = Path(scratch) / "copy" / PACKAGE
                copy_package(unpack(sub, Path(scratch) / "unpacked"), package)
                written[sub.name] = written_code(package, given)
            except SubmissionError as e:
                echo(f"similarity: skipped {sub.name}: {e}")
    return written


def write_pairs_csv(pairs: list[Pair], path: Path, threshold: float) -> Path:
    """Every flagged pair (Pair.flagged), highest first, names spreadsheet-safe."""
    from cs336_basics.staff.grader.spreadsheet import cell

    path = Path(path)
    with atomic_open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["first", "second", "score", "first_in_second", "second_in_first", "shared_tokens"])
        for p in (p for p in pairs if p.flagged(threshold)):
            out.writerow([cell(p.first), cell(p.second), f"{p.score:.3f}", f"{p.first_in_second:.3f}",
                          f"{p.second_in_first:.3f}", p.shared_tokens])  # fmt: skip
    return path


def similarity_report(
    directory: Path,
    out_dir: Path,
    against: Path | None = None,
    threshold: float = THRESHOLD,
    top: int = TOP_PAIRS,
    echo=print,
) -> Similarity:
    """Compare the submissions of directory pairwise and with those of `against`; write out_dir/pairs.csv
    (every flagged pair: Pair.flagged), out_dir/report.html (the `top` highest pairs side by side) and
    out_dir/written/<name>.py (what counted as each one's own code)."""
    if not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be a fraction in [0, 1], got {threshold}")
    if against is not None and not Path(against).is_dir():
        raise NotADirectoryError(f"against must be a directory of earlier submissions, got {against}")
    given = given_code()
    written = read_written(Path(directory), given, echo)
    if len(written) < 2 and against is None:
        raise UsageError(f"directory must hold at least 2 readable submissions to compare, got {len(written)}")
    prior = read_written(Path(against), given, echo) if against is not None else {}
    out_dir = Path(out_dir)
    result = compare(written, prior, out_dir, threshold, top)
    write_pairs_csv(result.pairs, out_dir / "pairs.csv", threshold)
    write_html(result, threshold, out_dir / "report.html")
    flagged = sum(p.flagged(threshold) for p in result.pairs)
    echo(
        f"similarity: {len(result.pairs)} pairs compared, {flagged} flagged (score at least {threshold:g}, "
        f"{MIN_SHARED_TOKENS} shared tokens or more); wrote {out_dir}/"
    )
    return result
