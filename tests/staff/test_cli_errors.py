"""Staff only: every `cs336` subcommand, found from the parsers (none listed here), answers a missing
input path, an empty folder and a number out of range with exactly one line on stderr, a non-zero
exit and no traceback (cs336_basics/cli_errors.py, cli_types.py); every subcommand's --help has a
description. Each command runs in-process through `main(argv)`: the bad value is refused before
any work starts."""

import argparse

import pytest

from cs336_basics import cli
from cs336_basics.cli_errors import UsageError
from cs336_basics.staff.cli import main
from cs336_basics.staff.commands import add_commands

# Arguments that name an input path by their metavar or destination: each must be checked by a
# path validator of cli_types.py (outputs, such as handout's OUT_DIR, are named otherwise).
PATH_METAVARS = {"DIR", "FILE", "PATH", "RUN_DIR", "SUBMISSION"}
PATH_DESTS = {"config", "checkpoint", "grid", "text", "run_dirs", "against"}
FREE_NUMBERS = {"seed"}  # any integer is a seed


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser(add_commands)
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


SUBCOMMANDS = _subcommands()


def _arguments(attribute: str) -> list[tuple[str, argparse.Action]]:
    """(subcommand, argument) for every argument whose type= validator carries `attribute`."""
    return [(name, a) for name, p in SUBCOMMANDS.items() for a in p._actions if hasattr(a.type, attribute)]


def _ids(cases) -> list[str]:
    # by number: a subcommand's name ("generate", "train") is a component's, which `-k` selects by
    return [f"argument{i}" for i in range(len(cases))]


PATHS, NUMBERS, OUTPUTS = _arguments("kind"), _arguments("bad_value"), _arguments("must_be_empty")


def _refused_in_one_line(argv: list[str], capsys) -> str:
    """Run `cs336 argv`; assert a non-zero exit, one line on stderr, no traceback; the line."""
    status = main(argv)
    err = capsys.readouterr().err
    assert status != 0, f"cs336 {' '.join(argv)} exited 0"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def _argv(name: str, action: argparse.Action, value: str) -> list[str]:
    return [name, *action.option_strings[:1], value]


def test_every_subcommand_has_a_description():
    assert SUBCOMMANDS
    assert not [name for name, p in SUBCOMMANDS.items() if not (p.description or "").strip()]


def test_every_path_and_number_argument_is_checked():
    unchecked = [f"{name} {a.option_strings or a.metavar or a.dest}" for name, p in SUBCOMMANDS.items()
                 for a in p._actions
                 if ((a.metavar in PATH_METAVARS or a.dest in PATH_DESTS) and not hasattr(a.type, "kind"))
                 or (a.type in (int, float) and a.dest not in FREE_NUMBERS)]  # fmt: skip
    assert not unchecked, f"use a validator of cs336_basics/cli_types.py for {unchecked}"


@pytest.mark.parametrize(("name", "action"), PATHS, ids=_ids(PATHS))
def test_a_missing_path_is_one_line_naming_it(name, action, tmp_path, capsys):
    missing = str(tmp_path / "missing")
    line = _refused_in_one_line(_argv(name, action, missing), capsys)
    assert missing in line and "no such path" in line


@pytest.mark.parametrize(("name", "action"), PATHS, ids=_ids(PATHS))
def test_an_empty_folder_is_one_line_naming_it(name, action, tmp_path, capsys):
    line = _refused_in_one_line(_argv(name, action, str(tmp_path)), capsys)
    assert str(tmp_path) in line and ("empty" in line or "a folder" in line)


@pytest.mark.parametrize(("name", "action"), OUTPUTS, ids=_ids(OUTPUTS))
def test_an_output_folder_with_files_in_it_is_one_line_naming_it(name, action, tmp_path, capsys):
    (tmp_path / "earlier.txt").write_text("an earlier result")
    line = _refused_in_one_line(_argv(name, action, str(tmp_path)), capsys)
    assert str(tmp_path) in line and "expected an empty or absent folder" in line


@pytest.mark.parametrize(("name", "action"), NUMBERS, ids=_ids(NUMBERS))
def test_a_number_out_of_range_is_one_line_naming_it(name, action, capsys):
    line = _refused_in_one_line(_argv(name, action, action.type.bad_value), capsys)
    assert f"argument {'/'.join(action.option_strings) or action.metavar or action.dest}" in line
    assert f"expected {action.type.__name__.replace('_', ' ')}, got {action.type.bad_value}" in line


def _command(error: BaseException, given: str = ""):
    def add(commands):
        p = commands.add_parser("raise", help="raises what the test asks")
        p.add_argument("path", nargs="?", default=given)
        p.set_defaults(run=lambda args: (_ for _ in ()).throw(error))

    return add


@pytest.mark.parametrize(
    "error",
    [UsageError("--thing: expected a thing, got another"),
     FileNotFoundError(2, "No such file or directory", "/given/inside/config.toml")],
    ids=["usage_error", "missing_file_under_a_given_path"],
)  # fmt: skip
def test_a_user_s_error_from_a_command_is_one_line(error, capsys):
    assert cli.main(["raise", "/given"], _command(error)) == 1
    err = capsys.readouterr().err
    assert err.startswith("cs336 raise: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "error",
    [KeyError("a bug"), FileNotFoundError(2, "No such file or directory", "/elsewhere/model.bin")],
    ids=["bug", "missing_file_not_given"],
)
def test_any_other_error_keeps_its_traceback(error):
    with pytest.raises(type(error)):
        cli.main(["raise", "/given"], _command(error))


HANDS_ON = {"pytest_args"}  # unknown arguments that go to another program (`cs336 status -k swiglu`: pytest's)


@pytest.mark.parametrize("name", [n for n, p in SUBCOMMANDS.items() if p.get_default("passes_unknown_args_to")
                                  not in HANDS_ON])  # fmt: skip
def test_every_subcommand_refuses_an_unknown_option_in_one_line(name, capsys):
    """Every subcommand runs here at least once; the line names what argparse or the command checks first
    (the unknown option, a required argument, train's unknown setting, sweep's missing --set)."""
    assert _refused_in_one_line([name, "--no-such-option=1"], capsys).startswith("cs336")
