"""`cs336 compare RUN_DIR...`: runs of `cs336 train` side by side, from their config.toml and
metrics.jsonl. One figure (PREFIX.png): the validation loss (lines with points) and the training
loss (thin lines, same colour) against the step and against wall-clock minutes, each run labelled
by the settings in which the runs differ. One Markdown table (PREFIX.md, also printed): final and
best validation loss, steps done, tokens per second, wall and CPU time, diverged or not."""

import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from cs336_basics.atomic_write import write_atomic
from cs336_basics.train import metrics as M
from cs336_basics.train.config import MACHINE, TrainConfig, apply, read_toml


@dataclass
class Run:
    run_dir: Path
    config: TrainConfig
    train: list[dict]  # the training records, in step order
    valid: list[dict]  # the validation records
    diverged_at: int | None  # the step of the record that said so

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
    diverged = [r["step"] for r in records if r.get("diverged")]
    return Run(run_dir, config, [r for r in records if "train_loss" in r], [r for r in records if "valid_loss" in r],
               diverged[-1] if diverged else None)  # fmt: skip


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


def figure(runs: list[Run], names: list[str]) -> bytes:
    """The PNG: losses against the step (left) and against wall-clock minutes (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), dpi=100, sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (run, name) in enumerate(zip(runs, names, strict=True)):
        colour = colours[i % len(colours)]
        for ax, x in zip(axes, ("step", "time_s"), strict=True):
            scale = 1 if x == "step" else 1 / 60
            t = [(r[x] * scale, r["train_loss"]) for r in run.train]
            v = [(r[x] * scale, r["valid_loss"]) for r in run.valid if x in r]
            if t:
                ax.plot(*zip(*t, strict=True), color=colour, linewidth=0.8, alpha=0.45)
            if v:
                ax.plot(*zip(*v, strict=True), "o-", color=colour, linewidth=1.5, markersize=3, label=name)
            if run.diverged_at is not None and t:
                ax.plot(*t[-1], "x", color=colour, markersize=9, label=None if v else f"{name} (diverged)")
    first = [r.train[0]["train_loss"] for r in runs if r.train and r.train[0]["train_loss"] < float("inf")]
    if first:  # a diverged run's loss would squash the others: the axis stops just above the first losses
        axes[0].set_ylim(top=max(first) * 1.05)
    for ax, xlabel in zip(axes, ("step", "wall-clock minutes"), strict=True):
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("loss (nats/token): validation o-, training thin")
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=8)
    return M.png_of(fig)


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_dir

    p = commands.add_parser("compare", help="one figure and one table of several cs336 train runs")
    p.description = __doc__
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", type=input_dir)
    p.add_argument("--out", default="compare", metavar="PREFIX", help="writes PREFIX.png and PREFIX.md")
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
    write_atomic(Path(f"{args.out}.png"), figure(runs, names))
    print(markdown, end="", flush=True)
    print(f"wrote {args.out}.png and {args.out}.md", file=sys.stderr)
    return 0
