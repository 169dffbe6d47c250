"""`cs336 train [--config FILE.toml] [--resume] [--setting=value ...]`: train a language model with
this package's components (every setting, its default and its meaning below).
Under torchrun (`torchrun --nproc-per-node W -m cs336_basics train ...`) every rank runs it, with
PyTorch's DistributedDataParallel. Bad input (a missing or empty corpus, a vocab_size below
256 + 1, a corrupt checkpoint or one from another configuration) is one line on stderr, exit 1."""

import argparse
import sys


def add_command(commands) -> None:
    p = commands.add_parser("train", help="train a language model end to end (tokenizer, model, AdamW, checkpoints)")
    from cs336_basics.cli_types import input_file
    from cs336_basics.train.config import settings_help

    p.description = __doc__
    p.epilog = settings_help()
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument(
        "--config", metavar="FILE", type=input_file, help="a TOML file of settings (then the --setting=value ones)"
    )
    p.add_argument("--resume", action="store_true", help="continue the run in out_dir from its checkpoint")
    p.set_defaults(run=run, overrides=[], passes_unknown_args_to="overrides")


def run(args) -> int:
    from cs336_basics.serialization import CheckpointError
    from cs336_basics.train.config import parse_overrides

    try:
        from cs336_basics.train.loop import resolve_config, train

        config = resolve_config(args.config, parse_overrides(args.overrides), args.resume)
        record = train(config, resume=args.resume)
    except NotImplementedError as e:
        print(f"cs336 train: a component it needs is not written yet: {e}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, CheckpointError, FloatingPointError) as e:
        message = str(e) if isinstance(e, (ValueError, FileNotFoundError)) else f"{type(e).__name__}: {e}"
        print(f"cs336 train: {' '.join(message.split())}", file=sys.stderr)
        return 1
    if "valid_loss" in record:
        print(f"step {record['step']}: validation loss {record['valid_loss']:.4f} ({config.out_dir})", file=sys.stderr)
    return 0
