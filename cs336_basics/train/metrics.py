"""The run's record beside its checkpoints: metrics.jsonl (one JSON object per line: training
records with "train_loss", evaluation records with "valid_loss") and loss.png, the two loss
curves against the step (matplotlib, Agg backend: no display needed)."""

import io
import json
from pathlib import Path

from cs336_basics.atomic_write import write_atomic

METRICS, PLOT = "metrics.jsonl", "loss.png"


def read_metrics(run_dir: Path) -> list[dict]:
    path = run_dir / METRICS
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def progress_fields(record: dict) -> dict[str, str]:
    """A training record as the progress shows it: `cs336 train`'s bar and `cs336 sweep`'s lines."""
    return {
        "loss": f"{record['train_loss']:.3f}",
        "tok_s": f"{record['tokens_per_s']:.0f}",
        "mfu": f"{record['mfu']:.1%}",
    }


def truncate_metrics(run_dir: Path, step: int) -> None:
    """Keep only the records up to `step` (a resumed run repeats what came after its checkpoint)."""
    kept = [r for r in read_metrics(run_dir) if r["step"] <= step]
    write_atomic(run_dir / METRICS, "".join(json.dumps(r) + "\n" for r in kept))


def append_metrics(run_dir: Path, record: dict) -> None:
    with open(run_dir / METRICS, "a") as f:
        f.write(json.dumps(record) + "\n")


def png_of(fig) -> bytes:
    """A matplotlib figure as PNG bytes, laid out tight; the figure is closed."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png")
    finally:
        plt.close(fig)
    return png.getvalue()


def plot_losses(run_dir: Path, title: str = "") -> None:
    """loss.png: training and validation loss against the step, from metrics.jsonl."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(run_dir)
    train = [(r["step"], r["train_loss"]) for r in records if "train_loss" in r]
    valid = [(r["step"], r["valid_loss"]) for r in records if "valid_loss" in r]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if train:
        ax.plot(*zip(*train, strict=True), label="train", linewidth=1)
    if valid:
        ax.plot(*zip(*valid, strict=True), "o-", label="validation", linewidth=1.5, markersize=3)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    write_atomic(run_dir / PLOT, png_of(fig))
