"""A sweep's grid: every combination of some settings' values, each one run of `cs336 train`.

The grid comes from a TOML file (a list is swept, a single value is fixed: `max_lr = [1e-3, 3e-3]`)
and from `--set key=v1,v2` arguments (after the file's). The runs are the Cartesian product in the
order the keys came, the last key varying fastest; each is named by its swept values,
`max_lr=1e-3-batch_size=8`, which is also its directory under the sweep's."""

import itertools
import os
from dataclasses import dataclass, fields

from cs336_basics.train.config import TrainConfig, apply, read_toml


@dataclass(frozen=True)
class GridRun:
    name: str  # the swept values, key=value joined by "-": the run's directory name
    settings: dict  # the swept values as command-line text, {setting: text}


def _text(value) -> str:
    """A TOML value as `--setting=value` text that TrainConfig reads back as the same value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_set(arg: str) -> tuple[str, list[str]]:
    """`key=v1,v2,...` -> (key, [v1, v2, ...]); ValueError naming the argument."""
    key, sep, values = arg.partition("=")
    items = [v.strip() for v in values.split(",")]
    if not sep or not key.strip() or not all(items):
        raise ValueError(f"--set must be setting=value1,value2,..., got {arg!r}")
    return key.strip().replace("-", "_"), items


def read_grid(grid_file: str | os.PathLike | None, sets: list[str]) -> tuple[dict, dict]:
    """(swept {setting: [texts]}, fixed {setting: value}) from the TOML file, then the --set arguments."""
    swept, fixed = {}, {}
    if grid_file:
        for key, value in read_toml(grid_file).items():
            if isinstance(value, list):
                if not value:
                    raise ValueError(f"{os.fspath(grid_file)!r}: {key} is an empty list (give at least one value)")
                swept[key.replace("-", "_")] = [_text(v) for v in value]
            else:
                fixed[key.replace("-", "_")] = value
    for arg in sets:
        key, values = parse_set(arg)
        swept[key] = values
    return swept, fixed


def grid_runs(swept: dict[str, list[str]]) -> list[GridRun]:
    """One GridRun per combination of the swept values (one run, named "default", if none)."""
    known = {f.name for f in fields(TrainConfig)}
    for key in swept:
        if key not in known:
            raise ValueError(f"unknown setting {key!r} in the grid (settings: {', '.join(sorted(known))})")
        if key == "out_dir":
            raise ValueError("out_dir cannot be swept: each run's directory is the sweep's --out plus its name")
    runs = []
    for values in itertools.product(*swept.values()):
        settings = dict(zip(swept, values, strict=True))
        apply(TrainConfig(), settings, "the grid")  # each value must read as its setting's type
        name = "-".join(f"{k}={v}" for k, v in settings.items()).replace(os.sep, "_") or "default"
        runs.append(GridRun(name, settings))
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"the grid repeats a run: {', '.join(repeated)} (a value given twice?)")
    return runs
