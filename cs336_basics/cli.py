"""`cs336`: the course's command line. `main(argv, add_commands)` lets another entry point add its
commands to these."""

import argparse
import sys
from collections.abc import Callable

from cs336_basics import account_cli, evaluate_cli, status, submit
from cs336_basics.cli_errors import ArgumentsRefused, CommandParser, run_command
from cs336_basics.generation import generate_cli
from cs336_basics.tokenizer_stats import cli as tokenizer_stats_cli
from cs336_basics.train import cli as train_cli
from cs336_basics.train import compare, sweep


def build_parser(add_commands: Callable | None = None) -> argparse.ArgumentParser:
    """The `cs336` parser: its subcommands and, if given, those `add_commands` adds."""
    parser = CommandParser(prog="cs336", description="The course's command line: one subcommand each.")
    commands = parser.add_subparsers(dest="command", required=True)
    status.add_command(commands)
    submit.add_command(commands)
    generate_cli.add_command(commands)
    train_cli.add_command(commands)
    sweep.add_command(commands)
    compare.add_command(commands)
    evaluate_cli.add_command(commands)
    account_cli.add_command(commands)
    tokenizer_stats_cli.add_command(commands)
    if add_commands is not None:
        add_commands(commands)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    args, unknown = parser.parse_known_args(argv)
    target = getattr(args, "passes_unknown_args_to", None)  # `cs336 status -k swiglu` hands -k to pytest
    if unknown and target is None:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if target is not None:
        setattr(args, target, getattr(args, target) + unknown)
    return args


def main(argv: list[str] | None = None, add_commands: Callable | None = None) -> int:
    """Parse argv and run its subcommand; a user's mistake is one line on stderr (cli_errors.py)."""
    parser = build_parser(add_commands)
    try:
        args = parse(parser, argv)
    except ArgumentsRefused as refused:
        print(refused, file=sys.stderr)
        return 2
    return run_command(f"{parser.prog} {args.command}", args)


if __name__ == "__main__":
    sys.exit(main())
