"""`cs336 train`'s corpus encoding, one process against one process per core, side by side.

    uv run python benchmarks/encode_corpus.py [--mb 50] [--repeats 3] [--vocab-size 2000]

Writes --mb megabytes of template stories (cs336_basics.train.toy_stories), trains a tokenizer
of --vocab-size on their first 2 MB, then encodes the whole text --repeats times each way,
alternating: encode_text(..., num_processes=1) (one process, the text read line by line with
encode_iterable) and encode_text's default (one process per core, the text cut where a document
starts). Prints the best wall-clock and CPU (this process and its children) seconds of each, their
ratio, and the load average beside them; checks that both give the same ids."""

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from cs336_basics.tokenizer.tokenizer import Tokenizer
from cs336_basics.tokenizer.train_bpe import train_bpe
from cs336_basics.train.config import EOT
from cs336_basics.train.tokens import encode_text
from cs336_basics.train.toy_stories import toy_stories


def _cpu_seconds() -> float:
    """User + system seconds of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def corpus(megabytes: float) -> str:
    story = len(toy_stories(np.random.default_rng(0), 100)) / 100
    return toy_stories(np.random.default_rng(0), int(megabytes * 1e6 / story))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, default=2000)
    args = parser.parse_args()
    text = corpus(args.mb)
    with tempfile.TemporaryDirectory() as tmp:
        sample = Path(tmp) / "sample.txt"
        sample.write_text(text[:2_000_000], encoding="utf-8")
        tokenizer = Tokenizer(*train_bpe(sample, args.vocab_size, [EOT]), [EOT])
    ways = {"one process": 1, f"{os.cpu_count()} processes": None}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    ids = {}
    for _ in range(args.repeats):
        for name, processes in ways.items():
            t0, c0 = time.perf_counter(), _cpu_seconds()
            ids[name] = encode_text(tokenizer, text, processes)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu_seconds() - c0)
            print(f"{name}: {wall[name][-1]:.2f} s wall, {cpu[name][-1]:.2f} s CPU, load {os.getloadavg()[0]:.1f}")
    first, second = ways
    assert np.array_equal(ids[first], ids[second]), "the two encodings differ"
    print(f"\n{len(text) / 1e6:.1f} MB, {ids[first].size:,} tokens, vocab {args.vocab_size}, best of {args.repeats}:")
    for name in ways:
        print(f"{name:>14}: {min(wall[name]):7.2f} s wall {len(text) / 1e6 / min(wall[name]):6.2f} MB/s, "
              f"{min(cpu[name]):7.2f} s CPU")  # fmt: skip
    print(f"speed-up (wall): {min(wall[first]) / min(wall[second]):.2f}x; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
