"""Grade every submission in a directory (its subdirectories and .zip files), N at a time, into
one results.json per submission and a CSV gradebook: submission, points per component, total,
maximum, how many lines the static check flagged for staff review (static_check.py), and with
`cs336 grade-all --similarity` each submission's highest similarity and with whom (similarity.py).

A name a spreadsheet would read as a formula is written as text (spreadsheet.py's cell).

Submissions are graded in threads of this process: the workers that run student code are
separate processes (forked from one shared forkserver), so N threads keep N workers busy.
"""

import csv
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from cs336_basics.atomic_write import atomic_open
from cs336_basics.cli_errors import UsageError
from cs336_basics.staff.grader.config import GradingConfig, load_config
from cs336_basics.staff.grader.grade import GradeReport, grade
from cs336_basics.staff.grader.report import write_results
from cs336_basics.staff.grader.spreadsheet import cell
from cs336_basics.staff.grader.submission import submissions_in


def write_gradebook(reports: list[GradeReport], path: Path, components: list[str], closest: dict | None = None) -> Path:
    """The CSV gradebook, written to a temporary name and renamed. With `closest` (submission name ->
    similarity.Closest), two more columns: each submission's highest similarity and with whom."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "w", newline="") as f:
        out = csv.writer(f)
        similar = ["similarity", "most_similar_to"] if closest is not None else []
        out.writerow(["submission", *components, "total", "max_score", "review", *similar])
        for r in reports:
            scores = r.component_scores()
            name = Path(r.submission).name
            row = [cell(name), *(f"{scores[c]:g}" for c in components), f"{r.score:g}", f"{r.max_score:g}"]
            row.append(str(len(r.review)))
            if closest is not None:
                match = closest.get(name)
                row += [f"{match.score:.3f}", cell(match.other)] if match else ["0", ""]
            out.writerow(row)
    return path


def grade_all(
    directory: Path,
    results_dir: Path,
    gradebook: Path,
    jobs: int = 2,
    config: GradingConfig | None = None,
    echo=print,
    closest: dict | None = None,
) -> list[GradeReport]:
    """Grade each submission of directory, `jobs` at a time, into results_dir/<name>.json
    (alice/ -> alice.json, bob.zip -> bob.zip.json) and the gradebook CSV (with similarity columns
    from `closest`, see write_gradebook); returns the reports, like the CSV's rows, in name order."""
    config = config or load_config()
    subs = submissions_in(directory)
    if not subs:
        raise UsageError(f"no submissions (subdirectories or .zip files) in {directory}")
    reports: dict[Path, GradeReport] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(grade, sub, config): sub for sub in subs}
        for future in as_completed(futures):
            sub = futures[future]
            report = reports[sub] = future.result()
            write_results(report, Path(results_dir) / f"{sub.name}.json")
            echo(f"{sub.name:<40} {report.score:>7.2f} / {report.max_score:g}  ({report.seconds:.1f} s)")
    ordered = [reports[s] for s in subs]
    write_gradebook(ordered, gradebook, config.components, closest)
    return ordered
