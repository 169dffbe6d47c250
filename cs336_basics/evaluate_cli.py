"""`cs336 evaluate --checkpoint DIR`: a cs336 train run's validation loss on the course corpus, in
nats per token and bits per byte, measured as the leaderboard measures it (cs336_basics/evaluate.py)."""

import sys


def run(args) -> int:
    from cs336_basics.evaluate import EVAL_CONTEXT, evaluate_model, shown
    from cs336_basics.serialization import CheckpointError
    from cs336_basics.train.run_dir import load_trained

    try:
        model, tokenizer = load_trained(args.checkpoint)
        if model.config.context_length < EVAL_CONTEXT:
            raise ValueError(f"context_length is {model.config.context_length}; evaluation uses {EVAL_CONTEXT}")
        result = evaluate_model(model, tokenizer, model.config.vocab_size)
    except NotImplementedError as e:
        print(f"cs336 evaluate: a component it needs is not written yet: {e}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, CheckpointError) as e:
        print(f"cs336 evaluate: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    print(f"validation loss {shown(result.nats_per_token)} nats/token, {shown(result.bits_per_byte)} bits/byte "
          f"({result.tokens:,} tokens, {result.bytes:,} bytes, context {EVAL_CONTEXT})")  # fmt: skip
    return 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_dir

    p = commands.add_parser(
        "evaluate", help="a trained run's validation loss on the course corpus (nats/token, bits/byte)"
    )
    p.description = __doc__
    p.add_argument("--checkpoint", required=True, metavar="DIR", type=input_dir, help="a cs336 train run directory")
    p.set_defaults(run=run)
