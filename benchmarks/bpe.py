"""Byte-level BPE speed and memory: the reference train_bpe against Hugging Face tokenizers'
BpeTrainer (Rust) with the same pre-tokenizer (GPT-2's byte-level regex), special token and
vocabulary size on the same corpus, at two corpus sizes so the growth shows; then encoding
throughput of Tokenizer.encode_iterable over a file's lines against tokenizers' encode_batch
over the file's documents (read whole, split at the special token) on the same vocabulary and
merges, with the same number of tokens; then the peak memory of encode_iterable on files of two sizes.

    uv run python benchmarks/bpe.py [--train-mb 1 20] [--vocab-size 10000] [--encode-mb 5 50]

Corpora: cs336_basics/tokenizer/synthetic.py, seeded (documents separated by <|endoftext|>;
nothing downloaded), written to a temporary directory. Each measurement runs in a fresh child
process; seconds are the wall-clock time of the work in the child (imports excluded) and CPU
(user + system of the whole child and the processes it started, interpreter start included:
the Rust trainer uses every core through threads, ours through processes); memory is the peak
resident set of the child or of one of its processes (wait4's ru_maxrss). Ratios are ours / tokenizers'
(> 1: ours is slower or larger)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

EOT = "<|endoftext|>"


def write_corpus(path: str, megabytes: float, seed: int = 0) -> None:
    from cs336_basics.tokenizer.synthetic import synthetic_text

    rng, size = np.random.default_rng(seed), 0
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            block = synthetic_text(rng, 200, [EOT], words_per_doc=(20, 120), lexicon_size=5000) + EOT
            f.write(block)
            size += len(block.encode("utf-8"))


CHILD = {
    "ours_train": """
from cs336_basics.tokenizer.train_bpe import train_bpe
vocab, merges = train_bpe(ARGS["corpus"], ARGS["vocab_size"], [ARGS["eot"]])
from cs336_basics.tokenizer.tokenizer import Tokenizer
Tokenizer(vocab, merges, [ARGS["eot"]]).to_files(ARGS["vocab_out"], ARGS["merges_out"])
""",
    "hf_train": """
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=ARGS["vocab_size"], special_tokens=[ARGS["eot"]], show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train([ARGS["corpus"]], trainer)
""",
    "ours_encode": """
from cs336_basics.tokenizer.tokenizer import Tokenizer
tok = Tokenizer.from_files(ARGS["vocab_out"], ARGS["merges_out"], [ARGS["eot"]])
n = 0
with open(ARGS["corpus"], encoding="utf-8") as f:
    for _ in tok.encode_iterable(f):
        n += 1
print(n)
""",
    "hf_encode": """
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
tok = Tokenizer(models.BPE.from_file(ARGS["vocab_out"], ARGS["merges_out"]))  # the files ours wrote
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
tok.add_special_tokens([AddedToken(ARGS["eot"], special=True, normalized=False)])
with open(ARGS["corpus"], encoding="utf-8") as f:
    docs = f.read().split(ARGS["eot"])  # the special token splits pre-tokens: the same ids as the whole text
print(sum(len(e.ids) for e in tok.encode_batch(docs)) + len(docs) - 1)
""",
}


def run_child(kind: str, **args) -> dict:
    """Run CHILD[kind] in a fresh Python; its wall and CPU seconds, peak memory (MB) and output."""
    code = (
        f"import json, time\nARGS = json.loads({json.dumps(json.dumps(args))})\nSTART = time.perf_counter()\n"
        + CHILD[kind]
        + "\nprint('seconds', time.perf_counter() - START)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    lines = proc.stdout.read().strip().splitlines()
    wall = float(lines[-1].split()[1])  # the work alone, without starting Python
    out = "\n".join(lines[:-1])
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed with exit code {proc.returncode}")
    return dict(wall=wall, cpu=usage.ru_utime + usage.ru_stime, peak_mb=usage.ru_maxrss / 1024, out=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-mb", type=float, nargs=2, default=[1.0, 20.0])
    parser.add_argument("--vocab-size", type=int, default=10000)
    parser.add_argument("--encode-mb", type=float, nargs=2, default=[5.0, 50.0])
    args = parser.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        files = dict(
            vocab_out=os.path.join(tmp, "vocab.json"),
            merges_out=os.path.join(tmp, "merges.txt"),
            eot=EOT,
            vocab_size=args.vocab_size,
            repo=repo,
        )
        print(f"\ntrain_bpe, vocab_size {args.vocab_size}: ours vs tokenizers BpeTrainer")
        print(
            f"{'corpus':>8} {'ours s (cpu)':>14} {'hf s (cpu)':>12} {'wall ratio':>10} {'cpu ratio':>9} "
            f"{'ours MB':>8} {'hf MB':>7}"
        )
        for mb in args.train_mb:
            corpus = os.path.join(tmp, f"train_{mb:g}.txt")
            write_corpus(corpus, mb)
            ours = run_child("ours_train", corpus=corpus, **files)
            hf = run_child("hf_train", corpus=corpus, **files)
            print(
                f"{mb:>6g}MB {ours['wall']:>6.2f} ({ours['cpu']:>5.2f}) {hf['wall']:>5.2f} ({hf['cpu']:>4.2f}) "
                f"{ours['wall'] / hf['wall']:>10.2f} {ours['cpu'] / hf['cpu']:>9.2f} "
                f"{ours['peak_mb']:>8.0f} {hf['peak_mb']:>7.0f}"
            )
        print(f"\nencode (vocabulary trained above on {args.train_mb[-1]:g} MB): ours encode_iterable vs tokenizers")
        print(f"{'file':>8} {'ours MB/s':>9} {'hf MB/s':>8} {'ratio':>6} {'ours peak MB':>12} {'hf peak MB':>10}")
        for mb in args.encode_mb:
            corpus = os.path.join(tmp, f"encode_{mb:g}.txt")
            write_corpus(corpus, mb, seed=1)
            size = os.path.getsize(corpus) / 1e6
            ours = run_child("ours_encode", corpus=corpus, **files)
            hf = run_child("hf_encode", corpus=corpus, **files)
            assert ours["out"] == hf["out"], f"token counts differ: {ours['out']} vs {hf['out']}"
            print(
                f"{mb:>6g}MB {size / ours['wall']:>9.2f} {size / hf['wall']:>8.2f} {ours['wall'] / hf['wall']:>6.2f} "
                f"{ours['peak_mb']:>12.0f} {hf['peak_mb']:>10.0f}"
            )
            os.remove(corpus)


if __name__ == "__main__":
    main()
