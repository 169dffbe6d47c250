"""The staff's `cs336`: the student commands plus fixtures, handout, grade, grade-all and autograder."""

import sys

from cs336_basics import cli
from cs336_basics.staff.commands import add_commands


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, add_commands)


if __name__ == "__main__":
    sys.exit(main())
