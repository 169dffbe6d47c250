"""`cs336 train`'s model FLOPs utilisation (cs336_basics/train/mfu.py): every training record of
metrics.jsonl carries model FLOPs per second (tokens/s x training FLOPs per token, as
cs336_basics/accounting counts them) and their share of the peak, measured by a matmul benchmark
unless the configuration states it. No assertion depends on how fast the machine is."""

import itertools
import json

import numpy as np
import pytest
import torch

from cs336_basics.accounting.flops import training_flops_per_token
from cs336_basics.train import loop as L
from cs336_basics.train import mfu as U
from cs336_basics.train.config import TrainConfig, load_config
from cs336_basics.train.loop import train
from cs336_basics.train.toy_stories import toy_stories

# metrics.jsonl rounds model_flops_per_s and mfu to 4 significant digits (relative error <= 5e-4) and
# tokens_per_s to 0.1 token/s (relative error <= 0.05 / tokens_per_s)
FOUR_DIGITS = 5e-4


def _run(tmp_path, **settings) -> list[dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    corpus = tmp_path / "stories.txt"
    corpus.write_text(toy_stories(np.random.default_rng(0), 100))
    config = TrainConfig(out_dir=str(tmp_path / "run"), corpus=str(corpus), vocab_size=280, context_length=16,
                         d_model=16, num_layers=1, num_heads=2, d_ff=32, batch_size=4, max_steps=4, warmup_steps=1,
                         eval_batches=1, log_interval=2, checkpoint_interval=4, threads=1, progress=False, device="cpu",
                         **{"eval_interval": 4, **settings})  # fmt: skip
    train(config)
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    return config, [r for r in records if "train_loss" in r]


def test_train_metrics_carry_model_flops_per_second_beside_tokens_per_second(tmp_path):
    config, records = _run(tmp_path, peak_flops=1e9)
    per_token = training_flops_per_token(config.model_config())
    assert len(records) == 2
    for r in records:
        expected = r["tokens_per_s"] * per_token
        assert r["model_flops_per_s"] == pytest.approx(expected, rel=FOUR_DIGITS + 0.05 / r["tokens_per_s"])


def test_train_mfu_is_model_flops_over_the_stated_peak(tmp_path):
    _, records = _run(tmp_path, peak_flops=2.5e9)
    for r in records:
        assert r["peak_flops_per_s"] == 2.5e9
        # both rounded to 4 significant digits from the same quotient
        assert r["mfu"] == pytest.approx(r["model_flops_per_s"] / 2.5e9, rel=2 * FOUR_DIGITS / (1 - FOUR_DIGITS))


def test_train_mfu_peak_is_measured_when_not_stated(tmp_path, monkeypatch):
    monkeypatch.setattr(U, "measure_peak_flops", lambda device, dtype: 3.0e9)
    _, records = _run(tmp_path)
    assert {r["peak_flops_per_s"] for r in records} == {3.0e9}


def test_train_mfu_peak_benchmark_divides_its_products_flops_by_the_fastest_timing(monkeypatch):
    clock = itertools.count(step=0.5)  # every timing takes 0.5 s: the peak is the products' FLOPs / 0.5
    monkeypatch.setattr(U.time, "perf_counter", lambda: next(clock))
    assert U.measure_peak_flops(torch.device("cpu"), size=8) == 2 * 8**3 * U.PEAK_PRODUCTS / 0.5


def test_train_mfu_negative_peak_is_refused_by_name():
    with pytest.raises(ValueError, match="peak_flops must be >= 0.*-1"):
        load_config(overrides={"peak_flops": "-1"})


def test_train_mfu_peak_is_printed_once_with_how_it_was_obtained(tmp_path, monkeypatch, capsys):
    _run(tmp_path / "given", peak_flops=2.5e9)
    given = [line for line in capsys.readouterr().err.splitlines() if "peak" in line]
    monkeypatch.setattr(U, "measure_peak_flops", lambda device, dtype: 3.0e9)
    _run(tmp_path / "measured")
    measured = [line for line in capsys.readouterr().err.splitlines() if "peak" in line]
    assert given == ["MFU divides by a peak of 2.5e+09 FLOP/s (given by peak_flops=2.5e+09 per process)"]
    assert len(measured) == 1 and "3e+09 FLOP/s (measured: the fastest of" in measured[0]
    assert f"{U.PEAK_SIZE}x{U.PEAK_SIZE} float32 matmuls on cpu" in measured[0]


def test_train_mfu_token_rate_leaves_out_validation_and_saving_time(tmp_path, monkeypatch):
    """A fake clock that ticks once per reading, and jumps by LONG during each validation: the rate
    of the record after a validation is that of the steps' ticks alone."""
    long, jump, ticks = 1e6, [0.0], itertools.count()
    monkeypatch.setattr(L.time, "perf_counter", lambda: next(ticks) + jump[0])
    real_evaluate = L.evaluate

    def slow_evaluate(*args, **kwargs):
        jump[0] += long
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(L, "evaluate", slow_evaluate)
    config, records = _run(tmp_path, peak_flops=1e9, eval_interval=2)  # validations after steps 2 and 4
    tokens_per_record = config.log_interval * config.batch_size * config.context_length
    assert [r["step"] for r in records] == [2, 4]
    # counted with the validation, the rate would be below tokens_per_record / LONG tokens per tick
    assert records[1]["tokens_per_s"] > 1000 * tokens_per_record / long
    assert records[1]["time_s"] > long  # the wall clock still counts it
