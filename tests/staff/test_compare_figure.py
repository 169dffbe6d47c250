"""Staff only: `cs336 compare`'s figure (cs336_basics/train/compare_figure.py) from synthetic run
logs: a run that diverged at its first logged step neither sets the y-range nor goes unmarked."""

import json
import math
from dataclasses import replace

import pytest

from cs336_basics.cli import main
from cs336_basics.train.compare import labels, read_run
from cs336_basics.train.compare_figure import TOP_EDGE, draw
from cs336_basics.train.config import TrainConfig

TRAINED = {1e-3: [7.5, 6.0, 5.0, 4.5], 1e-2: [7.0, 5.0, 4.0, 3.5]}  # max_lr: training losses, every 10 steps


def _write_run(root, max_lr: float, train: list[float], diverged: bool = False):
    run_dir = root / f"max_lr={max_lr}"
    run_dir.mkdir()
    (run_dir / "config.toml").write_text(replace(TrainConfig(), max_lr=max_lr, max_steps=40).to_toml())
    records = [{"step": 10 * (i + 1), "train_loss": loss, "tokens": 40960 * (i + 1), "time_s": 6.0 * (i + 1)}
               for i, loss in enumerate(train)]  # fmt: skip
    records += [{"step": r["step"], "valid_loss": r["train_loss"] + 0.1, "time_s": r["time_s"]}
                for r in records[1::2]]  # fmt: skip
    if diverged:
        records[len(train) - 1]["diverged"] = True
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_dir


@pytest.fixture
def runs(tmp_path):
    """Two runs that trained and one stopped as diverged at its first logged step, with a loss of 90."""
    dirs = [_write_run(tmp_path, lr, losses) for lr, losses in TRAINED.items()]
    dirs.append(_write_run(tmp_path, 1.0, [90.0], diverged=True))
    return [read_run(d) for d in dirs]


def _trained_range():
    values = [v for losses in TRAINED.values() for v in losses] + [v + 0.1 for losses in TRAINED.values()
                                                                   for v in losses[1::2]]  # fmt: skip
    return min(values), max(values)


def _markers(ax):
    return [line for line in ax.get_lines() if line.get_marker() == "^"]


def test_compare_figure_y_range_is_set_by_the_runs_that_trained(runs):
    fig = draw(runs, labels(runs))
    low, high = _trained_range()
    bottom, top = fig.axes[0].get_ylim()
    assert bottom < low < high < top < high + (high - low)  # the diverged run's 90 is off the axis
    assert fig.axes[1].get_ylim() == (bottom, top)


def test_compare_figure_marks_the_diverged_run_at_the_top_edge_and_in_the_legend(runs):
    fig = draw(runs, labels(runs))
    for ax in fig.axes:
        (marker,) = _markers(ax)
        assert list(marker.get_ydata()) == [TOP_EDGE] and marker.get_transform() == ax.get_xaxis_transform()
    assert list(_markers(fig.axes[0])[0].get_xdata()) == [10]  # the step it diverged at
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert [t for t in legend if "diverged" in t] == ["max_lr=1.0: diverged at step 10"]


def test_compare_figure_log_scale_spans_the_trained_runs_on_a_log_axis(runs):
    fig = draw(runs, labels(runs), log_scale=True)
    low, high = _trained_range()
    bottom, top = fig.axes[0].get_ylim()
    assert fig.axes[0].get_yscale() == "log"
    assert 0 < bottom < low < high < top < high * (high / low)


def test_compare_diverged_runs_include_a_latest_loss_above_guessing_and_the_start(tmp_path):
    guess = math.log(TrainConfig().vocab_size)
    rising = read_run(_write_run(tmp_path, 0.5, [7.0, 5.0, guess + 1]))  # not stopped, yet worse than guessing
    nan = read_run(_write_run(tmp_path, 0.6, [7.0, float("nan")]))
    slow_start = read_run(_write_run(tmp_path, 0.7, [guess + 1]))  # above guessing, but not above its start
    assert (rising.diverged_at, nan.diverged_at, slow_start.diverged_at) == (30, 20, None)


def test_compare_table_and_log_scale_option_name_the_diverged_run(runs, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["compare", *(str(r.run_dir) for r in runs), "--log-scale", "--out", str(out)]) == 0
    rows = out.with_suffix(".md").read_text().splitlines()[2:]
    assert [r.split(" | ")[-1] for r in rows] == ["no |", "no |", "yes, step 10 |"]
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
