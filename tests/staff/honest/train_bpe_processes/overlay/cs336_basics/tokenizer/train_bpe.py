"""Byte-level BPE training (Sennrich et al. 2016; GPT-2's byte-level variant), with CS336's
conventions: the vocabulary starts with the 256 single bytes (ids 0-255), then the special
tokens (UTF-8, in the order given), then one token per merge; `vocab_size` counts all three.
The most frequent adjacent pair within pre-tokens is merged; ties go to the lexicographically
greater pair of byte strings.

Pair counts are kept up to date per merge, not recounted: only the pre-tokens that contain the
merged pair change, and the best pair comes from a heap with stale entries skipped."""

import heapq
import os
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

from cs336_basics.tokenizer.pretokenize import _count_chunk, find_chunk_boundaries

NUM_WORKERS = 2  # pre-tokenization in parallel, as CS336's handout suggests

Pair = tuple[int, int]


def check_training_arguments(input_path, vocab_size: int, special_tokens: list[str]) -> None:
    """ValueError/TypeError naming the argument, for what train_bpe cannot train on."""
    if not isinstance(input_path, (str, os.PathLike)):
        raise TypeError(f"input_path must be a path (str or os.PathLike), got {type(input_path).__name__}")
    if not os.path.isfile(input_path):
        raise FileNotFoundError(f"input_path {str(input_path)!r} is not a file")
    if not isinstance(special_tokens, (list, tuple)) or not all(isinstance(s, str) and s for s in special_tokens):
        raise TypeError(f"special_tokens must be a list of non-empty str, got {special_tokens!r}")
    if len(set(special_tokens)) != len(special_tokens):
        raise ValueError(f"special_tokens must not repeat a token, got {special_tokens!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < 256 + len(special_tokens):
        raise ValueError(
            f"vocab_size must be at least 256 bytes + {len(special_tokens)} special tokens = "
            f"{256 + len(special_tokens)}, got {vocab_size}"
        )


class _Descending:
    """A heap key ordering byte-string pairs from the greatest: heapq pops the least item."""

    __slots__ = ("pair",)

    def __init__(self, pair: tuple[bytes, bytes]):
        self.pair = pair

    def __lt__(self, other: "_Descending") -> bool:
        return self.pair > other.pair

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.pair == other.pair


def merge_word(word: list[int], pair: Pair, new_id: int) -> list[int]:
    """`word` with every occurrence of `pair` replaced by `new_id`, left to right, not overlapping."""
    # BEGIN SOLUTION
    out, i, n = [], 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out
    # END SOLUTION


def bpe_merges(word_counts: dict[bytes, int], vocab: dict[int, bytes], num_merges: int) -> list[tuple[bytes, bytes]]:
    """Up to `num_merges` merges learned from pre-token counts, each added to `vocab` (in place)
    under the next id; fewer when no adjacent pair is left."""
    # BEGIN SOLUTION
    words = [list(w) for w in word_counts]  # bytes -> their byte values, which are the ids 0-255
    freqs = list(word_counts.values())
    counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)  # pair -> the words holding it
    for w, (word, f) in enumerate(zip(words, freqs, strict=False)):
        for pair in zip(word, word[1:], strict=False):
            counts[pair] += f
            where[pair].add(w)
    heap = [(-c, _Descending((vocab[a], vocab[b])), a, b) for (a, b), c in counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < num_merges and heap:
        neg, _, a, b = heapq.heappop(heap)
        if counts.get((a, b), 0) != -neg:
            continue  # stale: this pair's count changed after the entry was pushed
        new_id = len(vocab)
        vocab[new_id] = vocab[a] + vocab[b]
        merges.append((vocab[a], vocab[b]))
        delta: dict[Pair, int] = defaultdict(int)
        for w in where.pop((a, b)):
            old, f = words[w], freqs[w]
            new = merge_word(old, (a, b), new_id)
            old_pairs, new_pairs = list(zip(old, old[1:], strict=False)), list(zip(new, new[1:], strict=False))
            for pair in old_pairs:
                delta[pair] -= f
            for pair in new_pairs:
                delta[pair] += f
            for pair in set(old_pairs) - set(new_pairs) - {(a, b)}:
                where[pair].discard(w)
            for pair in new_pairs:
                where[pair].add(w)
            words[w] = new
        for pair, d in delta.items():
            if d == 0:
                continue
            c = counts[pair] + d
            if c > 0:
                counts[pair] = c
                heapq.heappush(heap, (-c, _Descending((vocab[pair[0]], vocab[pair[1]])), *pair))
            else:
                del counts[pair]
                where.pop(pair, None)
    return merges
    # END SOLUTION


def train_bpe(
    input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str], num_processes: int | None = None
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """(vocab, merges) of byte-level BPE trained on the UTF-8 text file `input_path`: vocab maps
    id -> token bytes (0-255 the bytes, then the special tokens, then one per merge, in order),
    merges lists the merged pairs in the order they were learned. Pre-tokens are counted in
    `num_processes` processes (default: pretokenize.count_pretokens_in_file's choice)."""
    check_training_arguments(input_path, vocab_size, special_tokens)
    # BEGIN SOLUTION
    vocab: dict[int, bytes] = {b: bytes([b]) for b in range(256)}
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    # pre-tokenize in NUM_WORKERS processes, each counting one chunk of the file that starts
    # where a special token starts (no pre-token crosses a boundary), then add up the counts
    workers = num_processes or NUM_WORKERS
    bounds = find_chunk_boundaries(input_path, workers, list(special_tokens))
    word_counts: Counter[bytes] = Counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        jobs = [
            pool.submit(_count_chunk, str(input_path), start, end, list(special_tokens))
            for start, end in zip(bounds, bounds[1:], strict=False)
        ]
        for job in jobs:
            word_counts.update(job.result())
    merges = bpe_merges(word_counts, vocab, vocab_size - len(vocab))
    return vocab, merges
    # END SOLUTION
