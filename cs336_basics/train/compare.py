"""`cs336 compare RUN_DIR...`: runs of `cs336 train` side by side, from their config.toml and
metrics.jsonl. One figure (PREFIX.png, compare_figure.py): the validation and training losses
against the step and against wall-clock minutes, each run labelled by the settings in which the
runs differ, the y-range set by the runs that trained and the diverged runs marked at its top edge
(--log-scale: a log axis). One Markdown table (PREFIX.md, also printed): final and best validation
loss, steps done, tokens per second, wall and CPU time, diverged or not.

A run has diverged if `cs336 train` stopped it for that (a training loss NaN, inf or above
diverge_loss), or if its latest training loss is not finite, or is above both ln(vocab_size) -- the
loss of guessing uniformly, near where every run starts -- and the run's own first logged loss: it
has gone up, and ends no better than guessing."""

import math
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from cs336_basics.atomic_write import write_atomic
from cs336_basics.train import metrics as M
from cs336_basics.train.compare_figure import figure
from cs336_basics.train.config import MACHINE, TrainConfig, apply, read_toml


@dataclass
class Run:
    run_dir: Path
    config: TrainConfig
    train: list[dict]  # the training records, in step order
    valid: list[dict]  # the validation records
    diverged_at: int | None  # the step at which it diverged (the module's docstring), None if it did not

    @property
    def last_train(self) -> dict:
        return self.train[-1] if self.train else {}


def read_run(run_dir: str | os.PathLike) -> Run:
    run_dir = Path(run_dir)
    config_file = run_dir / "config.toml"
    if not config_file.is_file() or not (run_dir / M.METRICS).is_file():
        raise FileNotFoundError(
            f"{os.fspath(run_dir)!r} is not a cs336 train run directory (config.toml and metrics.jsonl)"
        )
    config = apply(TrainConfig(), read_toml(config_file), os.fspath(config_file))
    records = M.read_metrics(run_dir)
    train = [r for r in records if "train_loss" in r]
    return Run(run_dir, config, train, [r for r in records if "valid_loss" in r],
               diverged_at(records, train, config.vocab_size))  # fmt: skip


def diverged_at(records: list[dict], train: list[dict], vocab_size: int) -> int | None:
    """The step at which the run diverged (the module's docstring says when it has), or None."""
    marked = [r["step"] for r in records if r.get("diverged")]
    if marked:
        return marked[-1]
    if not train:
        return None
    latest = train[-1]["train_loss"]
    if not math.isfinite(latest) or latest > max(math.log(vocab_size), train[0]["train_loss"]):
        return train[-1]["step"]
    return None


def labels(runs: list[Run]) -> list[str]:
    """Each run's settings that differ between the runs, `key=value, ...`; the directory name if none do."""
    names = [f.name for f in fields(TrainConfig) if f.name not in MACHINE]
    differ = [n for n in names if len({repr(getattr(r.config, n)) for r in runs}) > 1]
    if not differ:
        return [r.run_dir.name for r in runs]
    return [", ".join(f"{n}={getattr(r.config, n)}" for n in differ) for r in runs]


def _minutes(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds / 60:.2f}"


def table(runs: list[Run], names: list[str]) -> str:
    """The Markdown table, one row per run in the order given."""
    head = ("run", "final valid loss", "best valid loss", "steps", "tokens/s", "wall min", "CPU min", "diverged")
    rows = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for run, name in zip(runs, names, strict=True):
        last = run.last_train
        valid = [r["valid_loss"] for r in run.valid]
        speed = last["tokens"] / last["time_s"] if last.get("time_s") else None
        cells = (
            name,
            f"{valid[-1]:.4f}" if valid else "",
            f"{min(valid):.4f}" if valid else "",
            f"{last.get('step', 0)} / {run.config.max_steps}",
            f"{speed:.0f}" if speed else "",
            _minutes(last.get("time_s")),
            _minutes(last.get("cpu_s")),
            f"yes, step {run.diverged_at}" if run.diverged_at is not None else "no",
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_dir

    p = commands.add_parser("compare", help="one figure and one table of several cs336 train runs")
    p.description = __doc__
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", type=input_dir)
    p.add_argument("--out", default="compare", metavar="PREFIX", help="writes PREFIX.png and PREFIX.md")
    p.add_argument("--log-scale", action="store_true", help="draw the loss on a log axis")
    p.set_defaults(run=run)


def run(args) -> int:
    try:
        runs = [read_run(d) for d in args.run_dirs]
    except (ValueError, FileNotFoundError) as e:
        print(f"cs336 compare: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    names = labels(runs)
    markdown = table(runs, names)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(Path(f"{args.out}.md"), markdown)
    write_atomic(Path(f"{args.out}.png"), figure(runs, names, args.log_scale))
    print(markdown, end="", flush=True)
    print(f"wrote {args.out}.png and {args.out}.md", file=sys.stderr)
    return 0
