"""`cs336`: the course's command line. `status` is for everyone; the staff commands
(fixtures, handout, grade, ...) exist only where cs336_basics.staff is present."""

import argparse
import sys

from cs336_basics import generate_cli, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cs336", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    status.add_command(commands)
    generate_cli.add_command(commands)
    try:
        from cs336_basics.staff import commands as staff_commands
    except ModuleNotFoundError as e:  # the student handout has no staff package; other errors are bugs
        if e.name not in ("cs336_basics.staff", "cs336_basics.staff.commands"):
            raise
        staff_commands = None
    if staff_commands is not None:
        staff_commands.add_commands(commands)
    args, unknown = parser.parse_known_args(argv)
    target = getattr(args, "passes_unknown_args_to", None)  # `cs336 status -k swiglu` hands -k to pytest
    if unknown and target is None:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if target is not None:
        setattr(args, target, getattr(args, target) + unknown)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
