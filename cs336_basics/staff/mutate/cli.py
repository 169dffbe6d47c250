"""`cs336 mutate [-k COMPONENT ...] [--jobs N] [--list] [--verbose]` (staff): mutation testing of the
solution regions against each component's public tests; exit 1 if a survivor is unrecorded."""

import sys

from cs336_basics import COMPONENTS


def _run(args) -> int:
    from cs336_basics.staff.mutate import report
    from cs336_basics.staff.mutate.session import MutateConfig, component_mutants, mutate_component

    try:
        config = MutateConfig(components=tuple(args.k or COMPONENTS), jobs=args.jobs, cpu_factor=args.cpu_factor)
    except ValueError as e:
        print(f"cs336 mutate: {e}", file=sys.stderr)
        return 2
    if args.list:
        for component in config.components:
            for m in component_mutants(config.repo, component)[0]:
                print(f"{component} {m.file}:{m.line} {m.mutation}")
        return 0
    results = []
    for component in config.components:
        results.append(mutate_component(config, component, progress=lambda line: print(line, flush=True)))
        print(report.survivors(results[-1], args.verbose), flush=True)
    print("\n" + report.table(results))
    failed = [r.component for r in results if r.judgement.failed]
    if failed:
        print(f"unrecorded survivors in: {', '.join(failed)} (tests/staff/mutants/<component>.toml)", file=sys.stderr)
    return 1 if failed else 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import positive_float, positive_int

    p = commands.add_parser("mutate", help="(staff) mutation testing of the solution regions against the public tests")
    p.add_argument(
        "-k", action="append", choices=COMPONENTS, metavar="COMPONENT", help="component (repeatable; default: all)"
    )
    p.add_argument("--jobs", type=positive_int, default=1, help="mutants run at once (default 1)")
    p.add_argument(
        "--cpu-factor",
        type=positive_float,
        default=4.0,
        help="CPU limit per mutant, times the unmutated run's (default 4)",
    )
    p.add_argument("--list", action="store_true", help="list the mutants; run nothing")
    p.add_argument("--verbose", action="store_true", help="also show the diffs of recorded survivors")
    p.set_defaults(run=_run)
