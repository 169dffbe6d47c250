"""`cs336 grade`, `cs336 grade-all` and `cs336 autograder` (staff). Heavy imports wait until a
command runs, so `cs336 status` stays fast."""

from pathlib import Path


def _config(args):
    """The config of --config (default grading.toml), grading only the components of -k if given."""
    from dataclasses import replace

    from cs336_basics.staff.grader.config import DEFAULT_CONFIG, load_config

    config = load_config(Path(args.config) if args.config else DEFAULT_CONFIG)
    return replace(config, points={c: config.points[c] for c in args.k}) if args.k else config


def _refuse_without_sandbox(args) -> int | None:
    """Student code is untrusted: grade only at --require-isolation's level or above (preflight.py:
    "full", "container", "none"; default "container"); --allow-unsandboxed means "none". The
    refusal names each missing mechanism. Prints the level (the staff console) otherwise."""
    import sys

    from cs336_basics.staff.grader import preflight

    required = "none" if args.allow_unsandboxed else args.require_isolation
    failed = preflight.missing()
    if (problem := failed.pop(preflight.ENVIRONMENT, None)) is not None:
        return _refuse(args, problem)
    level = preflight.level(failed)
    if preflight.LEVELS.index(level) >= preflight.LEVELS.index(required):
        print(f"isolation level: {level}" + (f" (missing: {', '.join(failed)})" if failed else ""))
        preflight.record(failed)  # grade() states it: probed here, before grade-all starts its threads
        return None
    import os

    why = "without root" if os.geteuid() != 0 else f"at isolation level {level!r}, below the required {required!r}"
    lines = "\n".join(f"  {name}: {reason}" for name, reason in failed.items())
    print(
        f"cs336: refusing to grade {why}: student code would run without these protections of the sandbox "
        f"(which keeps it away from the hidden fixtures, the network and the machine's resources):\n{lines}\n"
        "Run as root (a container's default capabilities suffice for level 'container'), lower "
        "--require-isolation, or pass --allow-unsandboxed for submissions you trust.",
        file=sys.stderr,
    )
    return 2


def _refuse(args, problem: str) -> int:
    """No worker can run here (preflight's probe, or runner.WorkerCannotStart): say why, write a
    results.json holding only that (never a score of 0 for anyone), exit 3."""
    import sys

    from cs336_basics.staff.grader.report import write_refusal

    print(f"cs336: refusing to grade: {problem}", file=sys.stderr)
    if getattr(args, "results", None):
        write_refusal(problem, Path(args.results))
    return 3


def _grade(args) -> int:
    if (refused := _refuse_without_sandbox(args)) is not None:
        return refused
    from cs336_basics.staff.grader import runner

    runner.start_forkserver(fork_from_here=True)  # shares this process's torch pages: nothing loaded yet
    from cs336_basics.staff.grader.grade import grade
    from cs336_basics.staff.grader.report import summary_table, write_results

    try:
        report = grade(Path(args.submission), _config(args))
    except runner.WorkerCannotStart as e:
        return _refuse(args, str(e))
    path = write_results(report, Path(args.results))
    print(summary_table(report))
    for note in report.notes:
        print(f"note: {note}")
    print(f"wrote {path}")
    return 0


def _grade_all(args) -> int:
    if (refused := _refuse_without_sandbox(args)) is not None:
        return refused
    from cs336_basics.staff.grader import runner

    runner.start_forkserver(fork_from_here=True)
    from cs336_basics.staff.grader.gradebook import grade_all

    closest = None
    if args.similarity:  # before grading: reads the submissions only, and a bad option fails early
        from cs336_basics.staff.grader.similarity import similarity_report

        found = similarity_report(Path(args.directory), Path(args.out), args.against, args.threshold, args.top)
        closest = found.closest
    config, results, gradebook = _config(args), Path(args.results_dir), Path(args.gradebook)
    try:
        reports = grade_all(Path(args.directory), results, gradebook, args.jobs, config, closest=closest)
    except runner.WorkerCannotStart as e:
        return _refuse(args, str(e))
    print(f"graded {len(reports)} submissions; wrote {args.gradebook} and {args.results_dir}/<submission>.json")
    return 0


def _autograder(args) -> int:
    from cs336_basics.staff.grader.autograder import build_bundle

    print(f"wrote {build_bundle(Path(args.out_zip))}")
    return 0


def _common_options():
    """The options grade and grade-all share, as a parent parser."""
    import argparse

    from cs336_basics import COMPONENTS
    from cs336_basics.cli_types import input_file

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=input_file, help="grader limits (default: cs336_basics/staff/grading.toml)")
    common.add_argument(
        "-k",
        action="append",
        choices=COMPONENTS,
        metavar="COMPONENT",
        help="grade only this component, with its points (repeatable; default: all)",
    )
    common.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="grade at any isolation level, even without root (--require-isolation none)",
    )
    common.add_argument(
        "--require-isolation",
        choices=("none", "container", "full"),
        default="container",
        help="refuse to grade below this isolation level: full (namespaces, cgroup, ...), container "
        "(root without CAP_SYS_ADMIN: a user id per worker and seccomp), none (default: %(default)s)",
    )
    return common


def add_commands(commands) -> None:
    from cs336_basics.cli_types import input_dir, input_path, positive_int

    common = _common_options()
    p = commands.add_parser(
        "grade", parents=[common], help="(staff) grade one submission (a handout directory or a zip of one)"
    )
    p.add_argument("submission", metavar="SUBMISSION", type=input_path)
    p.add_argument(
        "--results", default="results.json", help="where to write Gradescope's results.json (default: %(default)s)"
    )
    p.set_defaults(run=_grade)

    p = commands.add_parser(
        "grade-all", parents=[common], help="(staff) grade every submission (subdirectory or zip) in DIR"
    )
    p.add_argument("directory", metavar="DIR", type=input_dir)
    p.add_argument(
        "-j", "--jobs", type=positive_int, default=2, help="submissions graded in parallel (default: %(default)s)"
    )
    p.add_argument("--gradebook", default="gradebook.csv", help="CSV gradebook to write (default: %(default)s)")
    p.add_argument(
        "--results-dir", default="results", help="one <submission>.json per submission (default: %(default)s)"
    )
    p.add_argument(
        "--similarity",
        action="store_true",
        help="also compare the submissions pairwise (cs336 similarity; the gradebook gains each one's closest match)",
    )
    from cs336_basics.staff.grader.similarity_cli import add_options

    add_options(p, "--similarity-out")
    p.set_defaults(run=_grade_all)

    p = commands.add_parser("autograder", help="(staff) write the Gradescope autograder bundle to OUT.zip")
    p.add_argument("out_zip", metavar="OUT.zip")
    p.set_defaults(run=_autograder)
