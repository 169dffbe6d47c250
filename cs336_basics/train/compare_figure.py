"""`cs336 compare`'s figure: the validation loss (lines with points) and the training loss (thin
lines, same colour) of each run against the step and against wall-clock minutes.

The y-range is set by the runs that trained: it spans their finite losses, with a margin, so a run
that diverged (compare.Run.diverged_at says which) cannot flatten the others. A diverged run is
drawn dashed as far as it stays in range, marked with a triangle at the top edge above the step
(or minute) where it diverged, and named "diverged" in the legend. Only when every run diverged
does the range come from all the finite losses. `log_scale` draws the loss on a log axis."""

import math

from cs336_basics.train import metrics as M

MARGIN = 0.05  # of the range (of its logarithm on a log axis), above and below the trained runs' losses
TOP_EDGE = 0.97  # where a diverged run's triangle sits, as a fraction of the axis height


def losses(run) -> list[float]:
    """Every training and validation loss a run logged."""
    return [r["train_loss"] for r in run.train] + [r["valid_loss"] for r in run.valid]


def y_limits(values: list[float], log_scale: bool = False) -> tuple[float, float] | None:
    """(bottom, top) spanning the finite values (positive ones on a log axis) with MARGIN; None if none."""
    kept = [v for v in values if math.isfinite(v) and (v > 0 or not log_scale)]
    if not kept:
        return None
    low, high = min(kept), max(kept)
    if log_scale:
        pad = (high / low) ** MARGIN if high > low else 1 + MARGIN
        return low / pad, high * pad
    pad = MARGIN * (high - low) or MARGIN * (abs(high) or 1)
    return low - pad, high + pad


def _draw_run(ax, run, name: str, colour, x: str) -> None:
    """One run on one axis: x is "step" or "time_s" (drawn in minutes)."""
    scale = 1 if x == "step" else 1 / 60
    train = [(r[x] * scale, r["train_loss"]) for r in run.train if x in r]
    valid = [(r[x] * scale, r["valid_loss"]) for r in run.valid if x in r]
    diverged = run.diverged_at is not None
    style = "--" if diverged else "-"
    if train:
        ax.plot(*zip(*train, strict=True), style, color=colour, linewidth=0.8 if valid else 1.2,
                alpha=0.45 if valid else 0.9, label=None if valid or diverged else name)  # fmt: skip
    if valid:
        ax.plot(*zip(*valid, strict=True), "o" + style, color=colour, linewidth=1.5, markersize=3,
                label=None if diverged else name)  # fmt: skip
    at = [r[x] * scale for r in run.train + run.valid if r["step"] == run.diverged_at and x in r]
    if diverged and at:
        ax.plot([at[0]], [TOP_EDGE], "^", color=colour, markersize=10, clip_on=False,
                transform=ax.get_xaxis_transform(), label=f"{name}: diverged at step {run.diverged_at}")  # fmt: skip


def draw(runs: list, names: list[str], log_scale: bool = False):
    """The matplotlib figure: losses against the step (left) and wall-clock minutes (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), dpi=100, sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (run, name) in enumerate(zip(runs, names, strict=True)):
        for ax, x in zip(axes, ("step", "time_s"), strict=True):
            _draw_run(ax, run, name, colours[i % len(colours)], x)
    trained = [run for run in runs if run.diverged_at is None] or runs
    if log_scale:
        from matplotlib.ticker import FormatStrFormatter

        axes[0].set_yscale("log")
        for axis_formatter in (axes[0].yaxis.set_major_formatter, axes[0].yaxis.set_minor_formatter):
            axis_formatter(FormatStrFormatter("%g"))  # 7, not 7 x 10^0
    limits = y_limits([v for run in trained for v in losses(run)], log_scale)
    if limits:
        axes[0].set_ylim(*limits)
    for ax, xlabel in zip(axes, ("step", "wall-clock minutes"), strict=True):
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3, which="both" if log_scale else "major")
    axes[0].set_ylabel("loss (nats/token): validation o-, training thin")
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=8)
    return fig


def figure(runs: list, names: list[str], log_scale: bool = False) -> bytes:
    """The figure as PNG bytes."""
    return M.png_of(draw(runs, names, log_scale))
