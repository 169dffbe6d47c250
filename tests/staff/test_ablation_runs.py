"""Each ablation setting end to end: `cs336 train` (its Python entry point) trains a few steps of a
tiny model and writes its checkpoint; `cs336 evaluate`, the grader's leaderboard evaluation of the
run's entry and `cs336 account` then read the run's configuration whole. The leaderboard gives
evaluate's number, and account's parameters and forward FLOPs are the trained model's own count and
torch.utils.flop_counter.FlopCounterMode's."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from cs336_basics import REPO
from cs336_basics import evaluate as E
from cs336_basics import leaderboard as L
from cs336_basics.cli import main
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.leaderboard import evaluate_entry
from cs336_basics.submit import write_submission
from cs336_basics.train.run_dir import load_trained

pytestmark = pytest.mark.slow  # trains a run per setting and grades each in the sandbox

GRADER = replace(load_config(), limits=replace(load_config().limits, total_s=3600))
SETTINGS = {
    "baseline": {},
    "post_norm": {"norm": "post"},
    "no_norm": {"norm": "none"},
    "nope": {"position": "none"},
    "silu_ffn": {"ffn": "silu", "d_ff": 96},
    "layernorm_eps": {"norm_type": "layernorm", "norm_eps": 1e-3},
}
TINY = {"vocab_size": 300, "context_length": E.EVAL_CONTEXT, "d_model": 32, "num_layers": 1, "num_heads": 2,
        "d_ff": 64, "batch_size": 4, "max_steps": 4, "warmup_steps": 1, "eval_interval": 4, "eval_batches": 1,
        "checkpoint_interval": 4, "threads": 1, "progress": "false", "device": "cpu", "max_lr": 1e-2}  # fmt: skip


def _train(out: Path, settings: dict) -> Path:
    args = [f"--{k}={v}" for k, v in {**TINY, **settings, "out_dir": out}.items()]
    assert main(["train", *args]) == 0
    return out


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> dict:
    """The baseline run's tokenizer files, which every other run reuses (one BPE training)."""
    run = _train(tmp_path_factory.mktemp("ablation") / "baseline", SETTINGS["baseline"])
    return {"vocab_path": run / L.VOCAB, "merges_path": run / L.MERGES}


@pytest.fixture(scope="module")
def runs(tokenizer, tmp_path_factory) -> dict[str, Path]:
    """Every setting's run, trained once with the baseline's tokenizer."""
    root = tmp_path_factory.mktemp("ablation")
    return {name: _train(root / name, {**settings, **tokenizer}) for name, settings in SETTINGS.items()}


@pytest.fixture(params=list(SETTINGS))
def run(request, runs) -> tuple[Path, dict]:
    return runs[request.param], SETTINGS[request.param]


def test_ablation_run_builds_the_configured_model(run):
    run_dir, settings = run
    model, _ = load_trained(run_dir)
    named = {"norm_eps": "eps"}
    assert {named.get(k, k): v for k, v in settings.items()} == {
        named.get(k, k): getattr(model.config, named.get(k, k)) for k in settings
    }


def test_ablation_run_leaderboard_entry_equals_cs336_evaluate(run, tmp_path, capsys):
    run_dir, _ = run
    assert main(["evaluate", "--checkpoint", str(run_dir)]) == 0
    line = capsys.readouterr().out
    model, tokenizer = load_trained(run_dir)
    expected = E.evaluate_model(model, tokenizer, model.config.vocab_size)
    submission, _, _ = write_submission(REPO, tmp_path / "submission.zip", L.entry_files(run_dir))
    got = evaluate_entry(submission, GRADER)
    assert got.nats_per_token is not None, got.message
    assert E.agree(got.nats_per_token, expected.nats_per_token), (got.nats_per_token, expected.nats_per_token)
    assert E.agree(got.bits_per_byte, expected.bits_per_byte), (got.bits_per_byte, expected.bits_per_byte)
    shown = f"validation loss {E.shown(expected.nats_per_token)} nats/token"
    assert line.startswith(shown) and shown in got.message


def test_ablation_run_account_equals_the_model_and_the_flop_counter(run, capsys):
    run_dir, _ = run
    assert main(["account", "--config", str(run_dir)]) == 0
    out = capsys.readouterr().out
    model, _ = load_trained(run_dir)
    ids = torch.zeros(1, model.config.context_length, dtype=torch.long)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids)
    assert f"parameters: {sum(p.numel() for p in model.parameters()):,}\n" in out
    forward = re.search(r"forward FLOPs, batch 1 x \d+ tokens: (\S+)", out)
    assert forward and forward[1] == f"{counter.get_total_flops():.4e}", (forward, counter.get_total_flops())


def test_ablation_runs_compare_labels_each_run_by_its_settings_and_reports_its_log(runs, tmp_path, capsys):
    assert main(["compare", *map(str, runs.values()), "--out", str(tmp_path / "compare")]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    assert len(rows) == len(runs) and len({r[0] for r in rows}) == len(runs)
    for (name, run_dir), row in zip(runs.items(), rows, strict=True):
        assert all(f"{k}={v}" in row[0] for k, v in SETTINGS[name].items()), (name, row[0])
        logged = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        assert row[1] == f"{[r['valid_loss'] for r in logged if 'valid_loss' in r][-1]:.4f}", (name, row)
