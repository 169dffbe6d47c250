"""`cs336 sweep`: run `cs336 train` once for every point of a grid (grid.py), each run in its own
directory under --out, --jobs processes at a time (one thread each unless `--threads=N` says).
Any other `--setting=value` (cs336 train's) holds for every run:
`cs336 sweep --set max_lr=1e-3,3e-3,1e-2 --max_steps=200 --jobs 2`.

A sweep can be stopped and started again: a finished run (its validation record at max_steps is
in metrics.jsonl) or a diverged one (its last record says "diverged", loop.py) is not run again,
a run with a checkpoint continues from it (`cs336 train --resume`), and any other starts afresh.
A directory holding a run of other settings is left alone and reported. A diverged run, or one
that fails, is reported and the others go on; the exit status is 1 if any run failed, else 0.
Ctrl-C or SIGTERM stops the sweep and the runs it started (their checkpoints stay).
With nothing swept (no --set, no list in --grid) it refuses to start unless told --default-run.
While a run trains, the sweep prints its progress: the step, loss, tokens/s and MFU as `cs336 train`'s
bar shows them (at most every PROGRESS_EVERY_S seconds) and every validation loss."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

from cs336_basics.train import metrics as M
from cs336_basics.train.config import MACHINE, TrainConfig, load_config
from cs336_basics.train.grid import grid_runs, read_grid

# the run directory's files (cs336_basics/train/loop.py; not imported here: it imports torch)
CHECKPOINT, CONFIG = "checkpoint.pt", "config.toml"

NEW, RESUMABLE, FINISHED, DIVERGED, FAILED = "new", "resumable", "finished", "diverged", "failed"
LOG = "train.log"  # the run's stdout and stderr, appended to by every attempt
PROGRESS_EVERY_S = 30.0  # seconds between a running run's progress lines (validation losses: each one)


@dataclass(frozen=True)
class SweepRun:
    name: str
    run_dir: Path
    config: TrainConfig  # what the run computes, checked before anything starts
    settings: dict  # `cs336 train` settings as text: the fixed ones, the run's grid point, out_dir


def plan(out: str, config_file: str | None, fixed: dict, swept: dict) -> list[SweepRun]:
    """The sweep's runs; ValueError naming the first bad setting, before anything runs."""
    base = {"threads": "1", **{k: str(v) if not isinstance(v, bool) else str(v).lower() for k, v in fixed.items()}}
    runs = []
    for point in grid_runs(swept):
        run_dir = Path(out) / point.name
        settings = {**base, **point.settings, "out_dir": os.fspath(run_dir), "progress": "false"}
        runs.append(SweepRun(point.name, run_dir, load_config(config_file, settings), settings))
    return runs


def run_state(run: SweepRun) -> str:
    """NEW, RESUMABLE (a checkpoint), FINISHED (validated at max_steps) or DIVERGED, from its files."""
    records = M.read_metrics(run.run_dir)
    if records and records[-1].get("diverged"):
        return DIVERGED
    if any(r["step"] == run.config.max_steps and "valid_loss" in r for r in records):
        return FINISHED
    return RESUMABLE if (run.run_dir / CHECKPOINT).is_file() else NEW


def conflicts(run: SweepRun) -> list[str]:
    """The settings (other than MACHINE's) in which the run already in run_dir differs from `run`."""
    saved_file = run.run_dir / CONFIG
    if not saved_file.is_file():
        return []
    saved = load_config(saved_file, check=False)
    return [f"{f.name}={getattr(saved, f.name)!r} there, {getattr(run.config, f.name)!r} here"
            for f in fields(TrainConfig)
            if f.name not in MACHINE and getattr(saved, f.name) != getattr(run.config, f.name)]  # fmt: skip


def start(run: SweepRun, resume: bool, config_file: str | None) -> subprocess.Popen:
    """`python -m cs336_basics train` for the run, its output appended to run_dir/train.log."""
    command = [sys.executable, "-m", "cs336_basics", "train", *(["--resume"] if resume else [])]
    command += [*(["--config", config_file] if config_file else []), *(f"--{k}={v}" for k, v in run.settings.items())]
    threads = str(run.config.threads or os.cpu_count() or 1)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    run.run_dir.mkdir(parents=True, exist_ok=True)
    with open(run.run_dir / LOG, "a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)


@dataclass
class Progress:
    """What of a running run's metrics.jsonl the sweep has shown."""

    shown: int = 0  # records reported
    last_line_s: float = float("-inf")  # time.monotonic() of the last progress line


def complete_records(run_dir: Path) -> list[dict]:
    """metrics.jsonl's records, without a last line still being written."""
    path = run_dir / M.METRICS
    text = path.read_text() if path.is_file() else ""
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]


def report_progress(run: SweepRun, progress: Progress, now: float, every: float = PROGRESS_EVERY_S) -> None:
    """Print the run's new validation losses, and its latest training record if `every` seconds have passed."""
    records = complete_records(run.run_dir)
    new, progress.shown = records[min(progress.shown, len(records)) :], len(records)
    latest = max((i for i, r in enumerate(new) if "train_loss" in r), default=None)
    due = latest is not None and now - progress.last_line_s >= every
    for i, record in enumerate(new):  # in the order train wrote them
        if "valid_loss" in record:
            print(f"{run.name}: step {record['step']}: validation loss {record['valid_loss']:.4f}", file=sys.stderr)
        elif due and i == latest:
            fields = " ".join(f"{k}={v}" for k, v in M.progress_fields(record).items())
            print(f"{run.name}: step {record['step']}/{run.config.max_steps} {fields}", file=sys.stderr)
            progress.last_line_s = now
    sys.stderr.flush()


def outcome(run: SweepRun, returncode: int) -> tuple[str, str]:
    """(state, one line) of a run whose process ended with `returncode`."""
    state, records = run_state(run), M.read_metrics(run.run_dir)
    if state == DIVERGED:
        last = records[-1]
        return state, f"diverged at step {last['step']} (training loss {last['train_loss']:.4g})"
    if state == FINISHED and returncode == 0:
        valid = [r["valid_loss"] for r in records if "valid_loss" in r]
        return state, f"finished: validation loss {valid[-1]:.4f}"
    lines = (run.run_dir / LOG).read_text(errors="replace").strip().splitlines()
    return FAILED, f"failed (exit {returncode}): {lines[-1] if lines else 'no output'} (see {run.run_dir / LOG})"


def execute(runs: list[SweepRun], jobs: int, config_file: str | None) -> dict[str, str]:
    """Run `runs` (each NEW or RESUMABLE), `jobs` at a time; {name: final state}."""
    waiting, running, states = list(runs), {}, {}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                run, progress = waiting.pop(0), Progress()
                resume = run_state(run) == RESUMABLE
                progress.shown = len(complete_records(run.run_dir)) if resume else 0
                print(f"{run.name}: {'resumed' if resume else 'started'} (its output: {run.run_dir / LOG})",
                      file=sys.stderr, flush=True)  # fmt: skip
                running[run.name] = (run, start(run, resume, config_file), progress)
            for name, (run, process, progress) in list(running.items()):
                report_progress(run, progress, time.monotonic())
                if process.poll() is not None:
                    del running[name]
                    states[name], line = outcome(run, process.returncode)
                    print(f"{name}: {line}", file=sys.stderr, flush=True)
            time.sleep(0.2)
    finally:
        for _, process, _ in running.values():  # stopped early: the runs stop too, their checkpoints stay
            process.terminate()
        for _, process, _ in running.values():
            process.wait()
        if running:
            print(f"stopped {', '.join(running)}: start the sweep again to resume", file=sys.stderr, flush=True)
    return states


def sweep(runs: list[SweepRun], jobs: int, config_file: str | None = None) -> dict[str, str]:
    """Every run brought to FINISHED or DIVERGED if it can be; {name: state}, FAILED for the rest."""
    states, todo = {}, []
    for run in runs:
        clash = conflicts(run)
        if clash:
            states[run.name] = FAILED
            print(f"{run.name}: failed: {run.run_dir} holds a run of other settings ({'; '.join(clash)}); "
                  "move it away or give another --out", file=sys.stderr)  # fmt: skip
            continue
        states[run.name] = run_state(run)
        if states[run.name] in (FINISHED, DIVERGED):
            print(f"{run.name}: {states[run.name]} already, not run again", file=sys.stderr)
        else:
            todo.append(run)
    print(f"{len(runs)} runs, {len(todo)} to run, {jobs} at a time", file=sys.stderr, flush=True)
    states |= execute(todo, jobs, config_file)
    return states


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_file, positive_int

    p = commands.add_parser("sweep", help="train every combination of some settings (a grid), resumably")
    p.description = __doc__
    p.add_argument(
        "--grid", metavar="FILE", type=input_file, help="a TOML file of settings: a list is swept, one value is fixed"
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2", help="sweep a setting (repeatable)")
    p.add_argument(
        "--config", metavar="FILE", type=input_file, help="a TOML file of settings for every run (cs336 train --config)"
    )
    p.add_argument("--out", default="runs/sweep", help="the sweep's directory: one run directory per grid point")
    p.add_argument("--default-run", action="store_true",
                   help="with nothing swept (no --set, no list in --grid): train the one run anyway")  # fmt: skip
    p.add_argument("--jobs", type=positive_int, default=1, help="runs at a time (default 1)")
    p.set_defaults(run=run, overrides=[], passes_unknown_args_to="overrides")


def run(args) -> int:
    from cs336_basics.cli_errors import UsageError
    from cs336_basics.train.config import parse_overrides

    try:
        swept, fixed = read_grid(args.grid, args.set)
        if not swept and not args.default_run:
            raise UsageError("nothing to sweep: expected --set KEY=V1,V2 or a --grid with a list; "
                             "--default-run trains the single run (cs336 train does too)")  # fmt: skip
        runs = plan(args.out, args.config, {**fixed, **parse_overrides(args.overrides)}, swept)
    except (ValueError, FileNotFoundError) as e:
        print(f"cs336 sweep: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        states = sweep(runs, args.jobs, args.config)
    finally:
        signal.signal(signal.SIGTERM, previous)
    counts = {s: sum(v == s for v in states.values()) for s in (FINISHED, DIVERGED, FAILED)}
    print(", ".join(f"{n} {s}" for s, n in counts.items()) + f"; compare them: cs336 compare {args.out}/*",
          file=sys.stderr)  # fmt: skip
    return 1 if counts[FAILED] else 0
