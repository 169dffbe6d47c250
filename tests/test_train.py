"""Your components train a model: `cs336 train`'s loop (cs336_basics/train/loop.py, given) runs
your train_bpe, Tokenizer, get_batch, TransformerLM, cross_entropy, AdamW, cosine schedule,
gradient clipping and save_checkpoint for STEPS steps on seeded template stories
(cs336_basics/train/toy_stories.py), and the validation loss must fall below LOSS_BELOW.
A few CPU seconds; it skips, naming the missing function, until every component is written.
Each ablation (no RMSNorm, post-norm, NoPE, the SiLU FFN) trains ABLATION_STEPS steps of the
same run, and its training loss must fall."""

import dataclasses
import json

import numpy as np
import pytest

from cs336_basics.train import metrics
from cs336_basics.train.config import TrainConfig
from cs336_basics.train.loop import train
from cs336_basics.train.toy_stories import toy_stories

# Measured by the course staff with the reference: after STEPS steps it reaches a validation loss
# of 0.37-0.41 nats/token here (0.366, 0.368, 0.367, 0.406, 0.406, 0.386 with seeds 0-5; seeds 0
# and 1 with ATEN_CPU_CAPABILITY=default: the same), on the way to the stories' own entropy (about
# 0.25: the draws of plot, names, place, thing and feeling). The best trigram model of the same
# tokens gets 0.59 and word frequencies alone 4.3, so a loss below 0.5 needs attention to more
# than the two previous tokens.
STEPS, MAX_LR = 100, 2e-2
LOSS_BELOW = 0.5


def short_run(out_dir, seed: int = 0, max_steps: int = STEPS) -> TrainConfig:
    """The short run's configuration: a 2-layer, 64-wide model on 600 stories (~62k tokens). The
    peak FLOP/s is given, not measured by a matmul benchmark: utilisation is not checked here."""
    corpus = out_dir / "stories.txt"
    corpus.write_text(toy_stories(np.random.default_rng(seed), 600))
    return TrainConfig(out_dir=str(out_dir / "run"), corpus=str(corpus), vocab_size=320, context_length=64,
                       d_model=64, num_layers=2, num_heads=2, d_ff=192, batch_size=16, max_steps=max_steps,
                       warmup_steps=20, max_lr=MAX_LR, min_lr=1e-3, eval_interval=max_steps, eval_batches=8,
                       log_interval=10, checkpoint_interval=max_steps, threads=1, progress=False, seed=seed,
                       device="cpu", peak_flops=1e9)  # fmt: skip


@pytest.fixture(autouse=True)
def no_loss_plot(monkeypatch):
    """The loop's loss.png is not drawn: no test here checks it (the course staff's tests of
    `cs336 train` do), and drawing it imports matplotlib and renders a PNG per run."""
    monkeypatch.setattr(metrics, "plot_losses", lambda run_dir, title="": None)


def test_train_short_run_loss_falls_below_the_measured_threshold(tmp_path):
    try:
        record = train(short_run(tmp_path))
    except NotImplementedError as e:
        pytest.skip(f"training needs every component; not implemented yet: {e}")
    losses = [r for r in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert record["valid_loss"] < LOSS_BELOW, (
        f"after {STEPS} steps the validation loss is {record['valid_loss']:.3f}, not below {LOSS_BELOW} "
        f"(the reference: 0.37-0.41); the metrics, one JSON line per record:\n" + "\n".join(losses)
    )


# The ablations of CS336 section 7.3 as `cs336 train` settings (TransformerLMConfig's norm, position, ffn).
ABLATIONS = {"no_norm": {"norm": "none"}, "post_norm": {"norm": "post"}, "nope": {"position": "none"},
             "ungated_ffn": {"ffn": "silu", "d_ff": 256}}  # fmt: skip


# Measured by the course staff with the reference (seeds 0-3): in 15 steps, 10 of them warm-up, at
# a peak rate of 1e-2, every ablation's training loss falls from 5.9-6.1 nats/token to 2.0-3.0 (in
# 30 steps with 20 of warm-up, to 1.2-1.8); a model that does not learn stays near ln(320) = 5.8
# or diverges.
ABLATION_STEPS, ABLATION_WARMUP, ABLATION_MAX_LR = 15, 10, 1e-2


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_train_ablation_lowers_the_training_loss(ablation, tmp_path):
    config = dataclasses.replace(short_run(tmp_path, max_steps=ABLATION_STEPS), log_interval=1, max_lr=ABLATION_MAX_LR,
                                 warmup_steps=ABLATION_WARMUP, **ABLATIONS[ablation])  # fmt: skip
    try:
        train(config)
    except NotImplementedError as e:
        pytest.skip(f"training needs every component; not implemented yet: {e}")
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    losses = [r["train_loss"] for r in records if "train_loss" in r]
    assert len(losses) == ABLATION_STEPS and losses[-1] < losses[0], (
        f"{ablation}: the training losses of {ABLATION_STEPS} steps: {losses}"
    )
