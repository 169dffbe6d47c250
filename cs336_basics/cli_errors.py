"""How `cs336` reports a user's mistake: one line on stderr and a non-zero exit, never a traceback.

Expected user errors are told apart from bugs by their kind, where subcommands are parsed and
dispatched (`cli.main`, `run_command`):
- argparse's own errors and the shared `type=` validators of cli_types.py (a number out of range, a
  missing input path, an empty folder): one line, `cs336 CMD: error: argument X: ...`, exit 2
  (returned by `cli.main`, not raised as SystemExit, so that in-process callers get a status);
- `UsageError`, raised by a command for input it cannot use: one line, exit 1;
- FileNotFoundError, NotADirectoryError or IsADirectoryError naming a path the user gave on the
  command line (or one inside it): one line, exit 1.
Any other exception, including those errors on paths the user did not give, is a bug: its
traceback is shown as Python shows it."""

import argparse
import os
import sys


class UsageError(ValueError):
    """Input a command cannot use; the message (one sentence) names the input, what was expected and what was
    given. A ValueError, so that a library function can raise it where callers already catch ValueError."""


class ArgumentsRefused(Exception):
    """argparse's error as its one line, `prog: error: message (see prog --help)`; `cli.main` prints it."""


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose error is one line, and whose subcommands' --help shows their one-line help
    as the description when they set none."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)

    def error(self, message: str):
        raise ArgumentsRefused(f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)")


class _Commands(argparse._SubParsersAction):
    def add_parser(self, name, **kwargs):
        kwargs.setdefault("description", kwargs.get("help"))
        return super().add_parser(name, **kwargs)


def _given_paths(args: argparse.Namespace) -> list[str]:
    """The argument values that can be paths, absolute; not the working folder or one above it (every
    file the program reads is inside those, so an error there would say nothing of the input)."""
    values = [v for v in vars(args).values() if isinstance(v, str | os.PathLike)]
    values += [x for v in vars(args).values() if isinstance(v, list | tuple) for x in v if isinstance(x, str)]
    cwd = os.getcwd()
    paths = [os.path.abspath(v) for v in values if v]
    return [p for p in paths if os.path.commonpath([p, cwd]) != p]


def _names_a_given_path(error: OSError, args: argparse.Namespace) -> bool:
    if not error.filename:
        return False
    failed = os.path.abspath(os.fspath(error.filename))
    return any(failed == given or failed.startswith(given.rstrip(os.sep) + os.sep) for given in _given_paths(args))


def run_command(prog: str, args: argparse.Namespace) -> int:
    """args.run(args), a user's error turned into one line on stderr and exit status 1 (the module's rules)."""
    try:
        return args.run(args) or 0
    except UsageError as e:
        message = str(e)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
        if not _names_a_given_path(e, args):
            raise
        message = f"{e.strerror or type(e).__name__}: {e.filename}"
    print(f"{prog}: {' '.join(message.split())}", file=sys.stderr)
    return 1
