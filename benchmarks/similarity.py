"""The similarity report at a course's scale: `cs336 similarity` on N generated submissions
(cs336_basics/staff/copies.py's cohort: the reference's regions, some renamed, commented, left
stubbed or replaced by independent bodies; a quarter zipped), compared pairwise; then, with
--separation, the scores of copies against those of independent solutions, which THRESHOLD
must separate.

    uv run python benchmarks/similarity.py [--submissions 200] [--keep DIR] [--separation]

The command runs in a child process of this one (which imports nothing of the project, so the
child starts small); CPU is its user + system time (interpreter start included), memory its peak
resident set (wait4's ru_maxrss), wall the elapsed time (on a loaded machine, CPU is the number
that does not move with the load)."""

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_similarity(submissions: Path, out: Path) -> dict:
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "cs336_basics.staff.cli", "similarity", str(submissions), "--out", str(out)]
    )
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"cs336 similarity exited with {os.waitstatus_to_exitcode(status)}")
    return dict(wall=time.perf_counter() - t0, cpu=usage.ru_utime + usage.ru_stime, peak_mb=usage.ru_maxrss / 1024)


def separation() -> None:
    """The scores of each kind of copy and of each independent pair in copies.py's small set."""
    from cs336_basics.staff import copies
    from cs336_basics.staff.grader.similarity import compare, given_code, written_code

    with tempfile.TemporaryDirectory() as d:
        written = {
            name: written_code(package, given_code()) for name, package in copies.small_set(Path(d) / "subs").items()
        }
        result = compare(written, {}, Path(d) / "out")
    for p in result.pairs:
        print(
            f"{p.first:>20} {p.second:>20}  score {p.score:.3f}  ({p.first_in_second:.3f}, {p.second_in_first:.3f})"
            f"  shared {p.shared_tokens}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument(
        "--keep", metavar="DIR", help="write the submissions and the report here (else a temporary folder)"
    )
    parser.add_argument("--separation", action="store_true", help="also print the scores of copies.small_set's pairs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        # in a child: a child forked from a process holding torch would start with its resident set
        make = (
            f"from cs336_basics.staff import copies; copies.cohort({str(root / 'submissions')!r}, {args.submissions})"
        )
        subprocess.run([sys.executable, "-c", make], check=True)
        print(f"generated {args.submissions} submissions")
        m = run_similarity(root / "submissions", root / "similarity")
        with open(root / "similarity" / "pairs.csv") as f:
            flagged = sum(1 for _ in csv.reader(f)) - 1
        pairs = args.submissions * (args.submissions - 1) // 2
        print(
            f"cs336 similarity, {args.submissions} submissions ({pairs} pairs, {flagged} flagged): "
            f"{m['cpu']:.1f} CPU s, {m['wall']:.1f} s wall, peak {m['peak_mb']:.0f} MB; "
            f"report.html {os.path.getsize(root / 'similarity' / 'report.html') / 1e6:.1f} MB"
        )
    if args.separation:
        separation()


if __name__ == "__main__":
    main()
