"""`cs336 similarity` and the options grade-all shares with it; similarity.py (copydetect, matplotlib)
is imported when a command runs, so `cs336 status` stays fast."""

from pathlib import Path


def add_options(parser, out_flag: str = "--out") -> None:
    """The options `cs336 similarity` and `cs336 grade-all --similarity` share (the report folder's
    flag named out_flag; its value is args.out)."""
    from cs336_basics.cli_types import input_dir, positive_int, probability
    from cs336_basics.staff.grader import similarity

    parser.add_argument(
        "--against",
        metavar="DIR",
        type=input_dir,
        help="earlier cohorts' submissions or public solutions to compare with",
    )
    parser.add_argument(
        out_flag,
        dest="out",
        default="similarity",
        help="folder for report.html, pairs.csv, written/ (default: %(default)s)",
    )
    parser.add_argument(
        "--threshold",
        type=probability,
        default=similarity.THRESHOLD,
        help="pairs.csv lists pairs scoring at least this that share at least "
        f"{similarity.MIN_SHARED_TOKENS} tokens (default: %(default)s)",
    )
    parser.add_argument(
        "--top",
        type=positive_int,
        default=similarity.TOP_PAIRS,
        help="pairs shown in report.html (default: %(default)s)",
    )


def _run(args) -> int:
    from cs336_basics.staff.grader.similarity import similarity_report

    similarity_report(Path(args.directory), Path(args.out), args.against, args.threshold, args.top)
    return 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_dir

    p = commands.add_parser(
        "similarity", help="(staff) how alike the submissions in DIR are: report.html, pairs.csv (never a score change)"
    )
    p.add_argument(
        "directory",
        metavar="DIR",
        type=input_dir,
        help="submissions as grade-all takes them (subdirectories, .zip files)",
    )
    add_options(p)
    p.set_defaults(run=_run)
