"""The vendored-code check (cs336_basics/staff/grader/vendored.py): how far apart the scores of
honest code and of disguised library copies are, for each k-gram length and winnowing window, and
what the check costs.

    uv run python benchmarks/vendored.py [--grid] [--reference DIR]

Honest code: every function of the reference package (DIR/cs336_basics, staff/ left out; this
repository's by default) and of the handout filled with the mistake catalogue's accepted variants
and with copies.py's alternative bodies. Copies: vendored_samples.SAMPLES pasted into the
reference, disguised (renamed, reformatted), and also with a statement of the copier's own after
every 4th, 3rd or 2nd statement (SHORT_SAMPLES are listed, not counted). A function's score is the
fraction of its fingerprints the closest library function shares; it counts only with
MIN_SHARED_TOKENS shared tokens. Times are CPU seconds of this process (wall in brackets).
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from cs336_basics import REPO
from cs336_basics.staff import copies
from cs336_basics.staff.grader import vendored as V
from cs336_basics.staff.vendored_samples import SAMPLES, SHORT_SAMPLES, vendored_package

INTERLEAVES = (0, 4, 3, 2)  # 0: renamed and reformatted only


def _timed(fn, *args):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn(*args)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def honest_packages(work: Path, reference: Path) -> list[Path]:
    """The reference package (staff/ left out) and the handout filled with independent bodies."""
    out = [work / "reference" / "cs336_basics"]
    shutil.copytree(reference / "cs336_basics", out[0], ignore=shutil.ignore_patterns("staff", "__pycache__"))
    for name, bodies in (("variants", copies.variant_bodies()), ("alternatives", copies.alternative_bodies())):
        copies.handout_package(work / name)
        copies.fill(work / name, bodies)
        out.append(work / name / "cs336_basics")
    return out


def copied_scores(corpus: V.Corpus, reference: Path, vendored: Path) -> list[V.Score]:
    """The scores of the vendored package's functions that the reference does not have."""
    known = {(s.path, s.function) for s in V.function_scores(reference, corpus=corpus)}
    return [s for s in V.function_scores(vendored, corpus=corpus) if (s.path, s.function) not in known]


def _line(s: V.Score) -> str:
    return f"{s.shared:5.2f} {s.shared_tokens:4d} tok  {s.path}:{s.line} {s.function} -> {s.library_function}"


def report(corpus: V.Corpus, honest: list[Path], vendored: dict[int, Path], verbose: bool) -> None:
    """Honest code's highest score and the copies' lowest (and how many are flagged, rightly named)."""
    n, expected = V.MIN_SHARED_TOKENS, {f"{m}.{q}" for m, q, _ in SAMPLES}
    scores = [s for p in honest for s in V.function_scores(p, corpus=corpus)]
    counted = sorted((s for s in scores if s.shared_tokens >= n), key=lambda s: -s.shared)
    above = max((s.shared_tokens for s in scores if s.shared > V.THRESHOLD), default=0)
    line = f"k={corpus.k:2d} window={corpus.window:2d}: honest max {counted[0].shared if counted else 0:.2f}"
    line += f" (above THRESHOLD: {above} tokens at most); copies"
    for interleave, package in vendored.items():
        found = [s for s in copied_scores(corpus, honest[0], package) if s.function != "checked"]
        right = [s for s in found if s.library_function in expected and s.shared_tokens >= n]
        flagged = [s for s in right if s.shared > V.THRESHOLD]
        line += (
            f", every {interleave or '-'}: min {min((s.shared for s in right), default=0):.2f} ({len(flagged)} flagged)"
        )
        if verbose and interleave == 0:
            print("copies, renamed and reformatted:", *(_line(s) for s in found), sep="\n    ")
    if verbose:
        print("honest code, highest (>= MIN_SHARED_TOKENS):", *(_line(s) for s in counted[:5]), sep="\n    ")
    print(line + f" (of {len(SAMPLES)})")


def timings(honest: Path) -> None:
    """The corpus build, and the check of the reference package (first and second submission)."""
    corpus, cpu, wall = _timed(V.library_corpus)
    print(f"corpus: {len(corpus.names)} functions, {corpus.tokens} tokens, {len(corpus.files)} files:", end=" ")
    print(f"{cpu:.2f} s CPU ({wall:.2f} s wall)")
    lines = sum(len(p.read_text().splitlines()) for p in honest.rglob("*.py"))
    findings, cpu, wall = _timed(V.vendored_findings, honest, V.handout_text)
    _, cpu2, wall2 = _timed(V.vendored_findings, honest, V.handout_text)
    print(f"check of the reference ({lines} lines, given = the handout): {cpu:.2f} s CPU ({wall:.2f} s wall)", end="")
    print(f" the first time, {cpu2:.2f} s CPU ({wall2:.2f} s wall) the next; findings: {len(findings)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", action="store_true", help="also every k in 8..20 and window in 4..12")
    parser.add_argument("--reference", type=Path, default=REPO, help="the repository whose package is honest code")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vendored-"))
    try:
        honest = honest_packages(work, args.reference)
        timings(honest[0])
        vendored = {e: vendored_package(work / f"vendored{e}", SAMPLES + SHORT_SAMPLES, e) for e in INTERLEAVES}
        print("findings in the vendored copy:", *V.vendored_findings(vendored[0], V.handout_text), sep="\n    ")
        report(V.library_corpus(), honest, vendored, verbose=True)
        for k, window in [(k, w) for k in (8, 10, 12, 15, 20) for w in (4, 6, 8, 12)] if args.grid else []:
            report(V.build_corpus(k, window), honest, vendored, verbose=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
