"""The `type=` validators every `cs336` subcommand shares: numbers in range (positive,
non-negative, a fraction), input paths that exist and are not empty, and output folders that are
empty or absent. A bad value is argparse's one-line error naming the argument, what it expects and
what it got (`cs336 account: error: argument --memory-gb: expected a positive number, got -1`).

Each number validator carries `bad_value`, a value it refuses, input path validators `kind` and the
output folder validator `must_be_empty`, so that a test can find and try every checked argument
from the parsers alone."""

import argparse
import math
from collections.abc import Callable
from pathlib import Path


def _number(parse: Callable, noun: str, lowest: float, inclusive: bool, highest: float | None = None) -> Callable:
    """A validator: `parse`(text) within [lowest or (lowest, highest]; its error names `noun`."""

    def check(text: str):
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        above = value >= lowest if inclusive else value > lowest
        if not above or (highest is not None and not value <= highest) or math.isnan(value):
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text}")
        return value

    check.__name__ = noun.replace(" ", "_")
    check.bad_value = str(lowest - 1) if inclusive else str(lowest)
    return check


def int_at_least(lowest: int) -> Callable:
    return _number(int, f"an integer of at least {lowest}", lowest, inclusive=True)


positive_int = _number(int, "a positive integer", 0, inclusive=False)
non_negative_int = _number(int, "a non-negative integer", 0, inclusive=True)
positive_float = _number(float, "a positive number", 0.0, inclusive=False)
non_negative_float = _number(float, "a non-negative number", 0.0, inclusive=True)
fraction = _number(float, "a number in (0, 1]", 0.0, inclusive=False, highest=1.0)
probability = _number(float, "a number in [0, 1]", 0.0, inclusive=True, highest=1.0)


def _path(kind: str) -> Callable:
    """A validator of an input path of `kind` (file, dir or either): it exists, and a folder is not empty."""

    def check(text: str) -> str:
        path = Path(text)
        if not path.exists():
            raise argparse.ArgumentTypeError(f"expected an existing {_NOUNS[kind]}, got {text!r}: no such path")
        if kind == "file" and not path.is_file():
            raise argparse.ArgumentTypeError(f"expected a file, got {text!r}: a folder")
        if kind == "dir" and not path.is_dir():
            raise argparse.ArgumentTypeError(f"expected a folder, got {text!r}: a file")
        if path.is_dir() and not any(path.iterdir()):
            raise argparse.ArgumentTypeError(f"expected a {_NOUNS[kind]} with something in it, got {text!r}: empty")
        return text

    check.__name__ = f"input_{kind}"
    check.kind = kind
    return check


def empty_or_absent_dir(text: str) -> str:
    """A folder to write into: absent, or empty (nothing of an earlier result is overwritten)."""
    path = Path(text)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise argparse.ArgumentTypeError(f"expected an empty or absent folder, got {text!r}: {_what(path)}")
    return text


empty_or_absent_dir.must_be_empty = True


def _what(path: Path) -> str:
    return "a folder with files in it" if path.is_dir() else "a file"


_NOUNS = {"file": "file", "dir": "folder", "path": "file or folder"}
input_file = _path("file")
input_dir = _path("dir")
input_path = _path("path")
