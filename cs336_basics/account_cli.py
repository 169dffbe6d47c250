"""`cs336 account (--shape NAME | --config FILE_OR_RUN_DIR) [options]`: parameters, forward FLOPs
by matrix multiply, training FLOPs per token, AdamW memory (a batch + b), the largest batch for a
memory budget and the days to train at a stated MFU and peak (cs336_basics/accounting). Here, not
in accounting/: it reads a training configuration, and training imports the accounting (MFU)."""

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line starts without torch
    from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig


def add_command(commands) -> None:
    from cs336_basics.accounting.report import Budget
    from cs336_basics.cli_types import fraction, input_path, non_negative_int, positive_float, positive_int

    d = Budget()
    p = commands.add_parser("account", help="resource accounting: parameters, FLOPs, memory, time to train")
    p.description = __doc__
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--shape", help="a named shape: gpt2-small, gpt2-medium, gpt2-large, gpt2-xl")
    which.add_argument("--config", type=input_path, help="a cs336 train TOML file or run directory")
    p.add_argument("--context-length", type=positive_int, help="another context length than the configuration's")
    p.add_argument("--batch-size", type=positive_int, default=d.batch, help="sequences per step (default %(default)s)")
    p.add_argument(
        "--bytes-per-element", type=positive_int, default=d.bytes_per_element, help="default %(default)s (float32)"
    )
    p.add_argument(
        "--memory-gb", type=positive_float, default=d.memory_bytes / 1e9, help="budget (default %(default)s GB)"
    )
    p.add_argument("--steps", type=non_negative_int, default=0, help="steps of training to time (0: no time line)")
    p.add_argument("--mfu", type=fraction, default=d.mfu, help="model FLOPs utilisation (default %(default)s)")
    p.add_argument("--peak-tflops", type=positive_float, default=d.peak_flops / 1e12, help="default %(default)s")
    p.set_defaults(run=run)


def run(args) -> int:
    from cs336_basics.accounting.report import Budget, report
    from cs336_basics.accounting.shapes import named_shape

    try:
        for name in ("batch_size", "bytes_per_element", "context_length"):
            value = getattr(args, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
        if args.steps < 0:
            raise ValueError(f"--steps must be >= 0, got {args.steps}")
        c = (
            named_shape(args.shape, args.context_length)
            if args.shape
            else train_config(args.config, args.context_length)
        )
        budget = Budget(bytes_per_element=args.bytes_per_element, memory_bytes=args.memory_gb * 1e9,
                        batch=args.batch_size, steps=args.steps, mfu=args.mfu, peak_flops=args.peak_tflops * 1e12)  # fmt: skip
        print(report(c, budget, title=args.shape or args.config))
    except (ValueError, FileNotFoundError) as e:
        print(f"cs336 account: {e}", file=sys.stderr)
        return 1
    return 0


def train_config(path: str | Path, context_length: int | None = None) -> "TransformerLMConfig":
    """The model of a `cs336 train` TOML file, or of a run directory's config.toml."""
    from cs336_basics.train.config import load_config

    path = Path(path)
    file = path / "config.toml" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"--config {str(path)!r}: no TOML file or run directory (with config.toml) there")
    config = load_config(file).model_config()
    return dataclasses.replace(config, context_length=context_length) if context_length else config
