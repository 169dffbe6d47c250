"""The staff's answer key to the experiments (handout/README.md, "Experiments"): what each one
shows with the reference at the default scale, from the runs' committed metrics.

    # measure (two processes at a time, niced: the machine is shared), GROUPS below for each
    nice -n 19 uv run cs336 sweep --out runs/answer_key/seeds --set seed=0,1,2 --jobs 2
    # copy each run's config.toml and metrics.jsonl (not its checkpoint) here, write README.md
    uv run python -m tests.staff.answer_key.make_page --collect runs/answer_key

Without --collect it rewrites README.md and the figures from what is committed. A group not yet
measured is listed with the command that measures it."""

import argparse
import shutil
import statistics
from dataclasses import dataclass, fields
from pathlib import Path

from cs336_basics.atomic_write import write_atomic
from cs336_basics.train.compare import Run, labels, read_run, table
from cs336_basics.train.compare_figure import figure
from cs336_basics.train.config import MACHINE, TrainConfig

HERE = Path(__file__).resolve().parent
KEPT = ("config.toml", "metrics.jsonl")  # what is committed of a run
SWEEP = "nice -n 19 uv run cs336 sweep --jobs 2 --out runs/answer_key/"
SEEDS = 3  # the baseline's seeds: the target comes from their spread
# The target's rule: a student's run must reach the seeds' mean validation loss plus this margin
# (or 3 standard deviations of the seeds, if larger), rounded up to 0.05.
MARGIN = 0.15


@dataclass(frozen=True)
class Group:
    name: str  # its directory, here and under runs/answer_key/
    title: str
    commands: tuple[str, ...]  # what measures it
    with_baseline: bool = False  # compared against the baseline's seed 0


GROUPS = (
    Group("seeds", "The baseline over seeds: the target", (f"{SWEEP}seeds --set seed=0,1,2",)),
    Group("lr", "Learning rate (200 steps)", (f"{SWEEP}lr --set max_lr=1e-3,3e-3,1e-2,3e-2,1e-1 --max_steps=200",
                                              f"{SWEEP}lr --set max_lr=1,10 --max_steps=200  # looking for divergence")),
    Group("batch", "Batch size (the same 19,200 windows of 128 tokens for each size)",
          tuple(f"{SWEEP}batch --set batch_size={b} --max_steps={19200 // b} --eval_interval={3200 // b} "
                f"--eval_batches={512 // b}" for b in (1, 8, 32, 64, 128))),
    Group("ablations", "The four ablations against the baseline",
          (f"{SWEEP}ablations --set norm=post,none", f"{SWEEP}ablations --set position=none",
           f"{SWEEP}ablations --set ffn=silu --d_ff=512"), with_baseline=True),
)  # fmt: skip


def collect(source: Path) -> None:
    """Copy config.toml and metrics.jsonl of every run under source/<group>/ to HERE/<group>/."""
    for group in GROUPS:
        for run_dir in sorted((source / group.name).glob("*/config.toml")):
            target = HERE / group.name / run_dir.parent.name
            target.mkdir(parents=True, exist_ok=True)
            for name in KEPT:
                if (run_dir.parent / name).is_file():
                    shutil.copyfile(run_dir.parent / name, target / name)


def runs_of(name: str) -> list[Run]:
    """The group's committed runs, in the order of their settings' values."""
    runs = [read_run(p.parent) for p in (HERE / name).glob("*/config.toml")]
    settings = [f.name for f in fields(TrainConfig) if f.name not in MACHINE]
    return sorted(runs, key=lambda r: tuple(getattr(r.config, n) for n in settings))


def finished(run: Run) -> bool:
    return bool(run.valid) and run.valid[-1]["step"] == run.config.max_steps


def target_section(seeds: list[Run]) -> list[str]:
    """The seeds' final validation losses, their mean and spread, and the target they give."""
    done = [r for r in seeds if finished(r)]
    losses = [r.valid[-1]["valid_loss"] for r in done]
    lines = [f"Finished seeds: {len(done)} of {SEEDS}; final validation losses "
             f"{', '.join(f'{v:.4f}' for v in losses) or 'none yet'}."]  # fmt: skip
    if len(done) >= 2:
        mean, sd = statistics.fmean(losses), statistics.stdev(losses)
        margin = max(MARGIN, 3 * sd)
        target = -(-(mean + margin) // 0.05) * 0.05
        lines.append(f"Mean {mean:.4f}, standard deviation {sd:.4f} (range {min(losses):.4f}-{max(losses):.4f}); "
                     f"margin max({MARGIN}, 3 sd) = {margin:.3f}: target validation loss <= {target:.2f}.")  # fmt: skip
    if len(done) < SEEDS:
        lines.append("The target needs every seed: finish them with the command above (it resumes).")
    return lines


def summary(runs: list[Run], names: list[str]) -> list[str]:
    """What the table shows, in one line: the lowest final validation loss, and which runs diverged."""
    done = [(r.valid[-1]["valid_loss"], name) for r, name in zip(runs, names, strict=True) if finished(r)]
    diverged = [name for r, name in zip(runs, names, strict=True) if r.diverged_at is not None]
    best = f"lowest final validation loss of the finished runs: {min(done)[1]} ({min(done)[0]:.4f})" if done else ""
    return [f"{best + '; ' if best else ''}diverged: {', '.join(diverged) or 'none'}."]


def group_section(group: Group, baseline: list[Run], figures: dict) -> list[str]:
    out = [f"## {group.title}", "", "```sh", *group.commands, "```", ""]
    runs = runs_of(group.name)
    if not runs:
        return [*out, "Not measured yet.", ""]
    runs = baseline + runs if group.with_baseline else runs
    unfinished = [r.run_dir.name for r in runs if not finished(r) and r.diverged_at is None]
    names = labels(runs)
    figures[f"{group.name}.png"] = lambda: figure(runs, names)
    out += [table(runs, names), f"![{group.title}]({group.name}.png)", "", *summary(runs, names), ""]
    if unfinished:
        out += [f"Unfinished (the command above resumes them): {', '.join(unfinished)}.", ""]
    if group.name == "seeds":
        out += [*target_section(runs), ""]
    return out


def page(figures: dict | None = None) -> str:
    """README.md's text; `figures` receives {file name: a function drawing its PNG}."""
    figures = {} if figures is None else figures
    seeds = runs_of("seeds")
    baseline = [r for r in seeds if r.config.seed == 0]
    lines = ["# The experiments' answer key (staff)", "",
             "Generated by `uv run python -m tests.staff.answer_key.make_page` from the committed runs "
             "(each run's config.toml and metrics.jsonl, under this directory): the reference at the "
             "default scale on the course corpus, one thread per run, two runs at a time on a shared "
             "2-core machine, so wall-clock times are the loaded machine's; CPU minutes compare.", ""]  # fmt: skip
    for group in GROUPS:
        lines += group_section(group, baseline[:1], figures)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collect", metavar="DIR", type=Path, help="copy the runs under DIR/<group>/ here first")
    args = parser.parse_args()
    if args.collect:
        collect(args.collect)
    figures = {}
    write_atomic(HERE / "README.md", page(figures))
    for name, draw in figures.items():
        write_atomic(HERE / name, draw())


if __name__ == "__main__":
    main()
