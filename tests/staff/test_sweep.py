"""Staff only: `cs336 sweep` (cs336_basics/train/sweep.py) and `cs336 compare` (compare.py) on
tiny runs: every grid point its own run directory, a diverged run marked and the others finished,
a sweep killed outright and started again repeats no finished run, a run stopped after a
checkpoint continues from it, and compare labels runs by what differs between them."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cs336_basics.cli import main
from cs336_basics.train import loop
from cs336_basics.train import metrics as M
from cs336_basics.train.grid import grid_runs
from cs336_basics.train.sweep import FINISHED, Progress, plan, report_progress, run_state
from cs336_basics.train.toy_stories import toy_stories

TINY = {"vocab_size": "300", "context_length": "32", "d_model": "32", "num_layers": "1", "num_heads": "2",
        "d_ff": "64", "batch_size": "4", "warmup_steps": "2", "eval_batches": "2", "max_steps": "20",
        "eval_interval": "10", "checkpoint_interval": "10", "log_interval": "5", "device": "cpu"}  # fmt: skip
HANG = 600  # seconds: only a hung sweep takes this long; no outcome depends on how fast runs are


def _settings(tmp_path: Path) -> list[str]:
    corpus = tmp_path / "stories.txt"
    corpus.write_text(toy_stories(np.random.default_rng(0), 100))
    return [f"--{k}={v}" for k, v in {**TINY, "corpus": corpus}.items()]


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _attempts(run_dir: Path) -> int:
    """How many times the sweep started `cs336 train` in run_dir (each writes its command to train.log)."""
    return sum(line.startswith("$ ") for line in (run_dir / "train.log").read_text().splitlines())


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A sweep of 2 learning rates x 2 divergence bounds, the bound of 1 below any loss it reaches."""
    root = tmp_path_factory.mktemp("sweep")
    argv = ["sweep", "--set", "max_lr=1e-2,2e-2", "--set", "diverge_loss=0,1", "--jobs", "2", "--out", str(root / "s")]
    assert main([*argv, *_settings(root)]) == 0
    return root / "s"


def test_sweep_writes_one_run_directory_per_grid_point(swept):
    names = {"max_lr=1e-2-diverge_loss=0", "max_lr=1e-2-diverge_loss=1", "max_lr=2e-2-diverge_loss=0",
             "max_lr=2e-2-diverge_loss=1"}  # fmt: skip
    assert {p.name for p in swept.iterdir()} == names
    assert all((swept / n / "config.toml").is_file() for n in names)


def test_sweep_marks_a_diverged_run_and_finishes_the_others(swept):
    diverged = _records(swept / "max_lr=1e-2-diverge_loss=1")
    assert diverged[-1]["diverged"] is True and diverged[-1]["step"] == 5  # the first logged loss is above 1
    finished = _records(swept / "max_lr=1e-2-diverge_loss=0")
    assert finished[-1]["step"] == 20 and "valid_loss" in finished[-1]


def test_sweep_started_again_runs_nothing_that_finished_or_diverged(swept, capsys):
    before = {p: p.read_bytes() for p in sorted(swept.rglob("*")) if p.is_file()}
    assert main(["sweep", "--set", "max_lr=1e-2,2e-2", "--set", "diverge_loss=0,1", "--out", str(swept),
                 *_settings(swept.parent)]) == 0  # fmt: skip
    assert {p: p.read_bytes() for p in sorted(swept.rglob("*")) if p.is_file()} == before
    assert "0 to run" in capsys.readouterr().err


def test_sweep_killed_outright_repeats_no_finished_run(tmp_path):
    out = tmp_path / "s"
    argv = ["sweep", "--set", "seed=0,1,2", "--out", str(out), *_settings(tmp_path)]
    sweep = subprocess.Popen([sys.executable, "-m", "cs336_basics", *argv], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    first = plan(str(out), None, TINY, {"seed": ["0"]})[0]
    deadline = time.monotonic() + HANG
    while run_state(first) != FINISHED and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        os.killpg(sweep.pid, signal.SIGKILL)  # the sweep and the run it had started, without warning
    except ProcessLookupError:  # it had finished every run first
        pass
    sweep.wait()
    assert run_state(first) == FINISHED
    kept = (out / "seed=0" / "metrics.jsonl").read_bytes(), (out / "seed=0" / "checkpoint.pt").read_bytes()
    assert main(argv) == 0
    assert ((out / "seed=0" / "metrics.jsonl").read_bytes(), (out / "seed=0" / "checkpoint.pt").read_bytes()) == kept
    assert _attempts(out / "seed=0") == 1
    for seed in (1, 2):
        assert _records(out / f"seed={seed}")[-1]["step"] == 20


def _processes_naming(text: str) -> list[int]:
    """The ids of live processes whose command line contains `text` (Linux /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # it ended meanwhile
            pass
    return found


def test_sweep_stopped_by_sigterm_stops_its_runs(tmp_path):
    out = tmp_path / "s"
    argv = ["sweep", "--set", "seed=0", "--out", str(out), *_settings(tmp_path), "--max_steps=100000"]
    sweep = subprocess.Popen([sys.executable, "-m", "cs336_basics", *argv], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + HANG
    while not _processes_naming(f"--out_dir={out}") and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    sweep.send_signal(signal.SIGTERM)  # the sweep alone, as `kill PID` does
    assert sweep.wait(timeout=HANG) == 128 + signal.SIGTERM
    assert "stopped seed=0: start the sweep again to resume" in sweep.stderr.read()
    assert _processes_naming(f"--out_dir={out}") == []


def test_sweep_continues_a_stopped_run_where_it_stopped(tmp_path, monkeypatch):
    argv = ["sweep", "--set", "seed=3", "--out", str(tmp_path / "s"), *_settings(tmp_path)]
    settings = dict(a[2:].split("=", 1) for a in argv[5:])
    run = plan(str(tmp_path / "s"), None, settings, {"seed": ["3"]})[0]
    real_save = loop.save_checkpoint

    def save_then_stop(*args):  # the state a kill right after the step-10 checkpoint leaves
        real_save(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "save_checkpoint", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        loop.train(run.config)
    monkeypatch.undo()
    first_half = [{**r, "before_the_stop": True} for r in _records(run.run_dir)]
    (run.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first_half))

    assert main(argv) == 0
    records = _records(run.run_dir)
    assert records[: len(first_half)] == first_half  # kept: a run started afresh would rewrite them
    assert [r["step"] for r in records if "train_loss" in r] == [5, 10, 15, 20]
    assert "train --resume" in (run.run_dir / "train.log").read_text()


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--set", "max_learning_rate=1e-3,1e-2"], "unknown setting 'max_learning_rate'"),
     (["--set", "max_lr=1e-3,fast"], "max_lr must be float, got 'fast'"),
     (["--set", "max_lr="], "--set must be setting=value1,value2"),
     (["--set", "max_lr=1e-3,1e-3"], "the grid repeats a run: max_lr=1e-3"),
     ([], "nothing to sweep: expected --set KEY=V1,V2")],
    ids=["unknown_setting", "bad_value", "no_value", "repeated_value", "nothing_swept"],
)  # fmt: skip
def test_sweep_bad_grid_is_one_line_naming_it(args, expected, tmp_path, capsys):
    assert main(["sweep", "--out", str(tmp_path / "s"), *args]) == 1
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


def test_sweep_jobs_below_one_is_one_line_naming_it(tmp_path, capsys):
    assert main(["sweep", "--set", "seed=0", "--out", str(tmp_path / "s"), "--jobs", "0"]) == 2
    err = capsys.readouterr().err
    assert "argument --jobs: expected a positive integer, got 0" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "s").exists()


def test_sweep_leaves_a_directory_of_other_settings_alone(swept, capsys):
    argv = ["sweep", "--set", "max_lr=1e-2", "--set", "diverge_loss=0", "--out", str(swept), *_settings(swept.parent)]
    before = (swept / "max_lr=1e-2-diverge_loss=0" / "metrics.jsonl").read_bytes()
    assert main([*argv, "--max_steps=30"]) == 1
    assert "max_steps=20 there, 30 here" in capsys.readouterr().err
    assert (swept / "max_lr=1e-2-diverge_loss=0" / "metrics.jsonl").read_bytes() == before


def test_sweep_grid_from_a_toml_table_of_lists(tmp_path):
    (tmp_path / "grid.toml").write_text('max_lr = [1e-3, 3e-3]\nnorm = ["pre", "post"]\nmax_steps = 50\n')
    from cs336_basics.train.grid import read_grid

    swept, fixed = read_grid(tmp_path / "grid.toml", ["seed=0,1"])
    assert [r.name for r in grid_runs(swept)][:3] == ["max_lr=0.001-norm=pre-seed=0", "max_lr=0.001-norm=pre-seed=1",
                                                      "max_lr=0.001-norm=post-seed=0"]  # fmt: skip
    assert len(grid_runs(swept)) == 8 and fixed == {"max_steps": 50}


def test_compare_labels_runs_by_the_settings_that_differ(swept, tmp_path, capsys):
    runs = sorted(swept.iterdir())
    assert main(["compare", *map(str, runs), "--out", str(tmp_path / "c")]) == 0
    table = (tmp_path / "c.md").read_text()
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = table.splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == [
        "| max_lr=0.01, diverge_loss=0.0", "| max_lr=0.01, diverge_loss=1.0",
        "| max_lr=0.02, diverge_loss=0.0", "| max_lr=0.02, diverge_loss=1.0"]  # fmt: skip
    assert [r.split(" | ")[-1] for r in rows] == ["no |", "yes, step 5 |", "no |", "yes, step 5 |"]
    assert table == capsys.readouterr().out


def test_compare_table_gives_the_final_and_best_validation_loss(swept, tmp_path):
    run = swept / "max_lr=2e-2-diverge_loss=0"
    valid = [r["valid_loss"] for r in _records(run) if "valid_loss" in r]
    assert main(["compare", str(run), "--out", str(tmp_path / "c")]) == 0
    cells = (tmp_path / "c.md").read_text().splitlines()[2].split(" | ")
    assert cells[1:4] == [f"{valid[-1]:.4f}", f"{min(valid):.4f}", "20 / 20"]


def test_compare_of_a_directory_that_is_not_a_run_names_it(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a run")  # an empty folder is refused before: test_cli_errors.py
    assert main(["compare", str(tmp_path)]) == 1
    assert f"{str(tmp_path)!r} is not a cs336 train run directory" in capsys.readouterr().err


def test_answer_key_page_is_current_with_the_committed_runs():
    from tests.staff.answer_key import make_page

    committed = (make_page.HERE / "README.md").read_text()
    assert make_page.page() == committed, "run: uv run python -m tests.staff.answer_key.make_page"


def test_sweep_shows_a_running_run_s_progress_as_train_s_bar_does(tmp_path, capsys):
    (run,) = plan(str(tmp_path / "s"), None, dict(TINY), {"seed": [0]})
    run.run_dir.mkdir(parents=True)
    training = {"step": 5, "train_loss": 5.25, "tokens_per_s": 1234.0, "mfu": 0.125}
    lines = [json.dumps(training), json.dumps({"step": 10, "valid_loss": 4.5}), '{"step": 15, "train_l']
    (run.run_dir / "metrics.jsonl").write_text("\n".join(lines))  # the last line still being written
    progress = Progress()
    report_progress(run, progress, now=0.0, every=60.0)
    fields = " ".join(f"{k}={v}" for k, v in M.progress_fields(training).items())
    assert capsys.readouterr().err.splitlines() == [f"seed=0: step 5/20 {fields}",
                                                    "seed=0: step 10: validation loss 4.5000"]  # fmt: skip
    with open(run.run_dir / "metrics.jsonl", "a") as f:
        f.write('oss": 5.0, "tokens_per_s": 1.0, "mfu": 0.1}\n')
    report_progress(run, progress, now=30.0, every=60.0)  # within `every` of the last line: nothing
    assert capsys.readouterr().err == "" and progress.shown == 3
