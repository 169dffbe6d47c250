"""Staff subcommands of `cs336`."""


def _fixtures(args) -> int:
    from cs336_basics.staff import make_fixtures

    if args.check:
        bad = make_fixtures.drifted() + [f"{p}: no case makes this file" for p in make_fixtures.stale_files()]
        print("fixtures are current" if not bad else "\n".join(bad))
        return 1 if bad else 0
    written = make_fixtures.write_all(redraw=set(args.redraw))
    for path in written:
        print("wrote", path.relative_to(make_fixtures.FIXTURES_DIR.parent))
    print(f"{len(written)} fixture files written, {len(make_fixtures.CASES) - len(written)} already current")
    return 0


def add_commands(commands) -> None:
    p = commands.add_parser("fixtures", help="(staff) write fixtures/ and hidden_fixtures/ from the case registry")
    p.add_argument(
        "--check", action="store_true", help="compare the stored files with what the generator makes; write nothing"
    )
    p.add_argument(
        "--redraw",
        nargs="+",
        default=[],
        metavar="CASE",
        help="draw these cases' inputs from their seeds again (stored inputs are otherwise kept)",
    )
    p.set_defaults(run=_fixtures)

    from cs336_basics.staff import handout

    handout.add_command(commands)

    from cs336_basics.staff import corpus_make as corpus

    corpus.add_command(commands)

    from cs336_basics.staff import accounting_key

    accounting_key.add_command(commands)

    from cs336_basics.staff.grader import cli as grader_cli  # grade, grade-all, autograder

    grader_cli.add_commands(commands)

    from cs336_basics.staff.grader import similarity_cli

    similarity_cli.add_command(commands)

    from cs336_basics.staff.mutate import cli as mutate_cli

    mutate_cli.add_command(commands)
