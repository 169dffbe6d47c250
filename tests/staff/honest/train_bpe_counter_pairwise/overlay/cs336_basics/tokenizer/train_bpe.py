"""Byte-level BPE training (Sennrich et al. 2016; GPT-2's byte-level variant), with CS336's
conventions: the vocabulary starts with the 256 single bytes (ids 0-255), then the special
tokens (UTF-8, in the order given), then one token per merge; `vocab_size` counts all three.
The most frequent adjacent pair within pre-tokens is merged; ties go to the lexicographically
greater pair of byte strings.

Pair counts are kept up to date per merge, not recounted: only the pre-tokens that contain the
merged pair change, and the best pair comes from a heap with stale entries skipped."""

import itertools
import os
from collections import Counter, defaultdict

from cs336_basics.tokenizer.pretokenize import count_pretokens_in_file

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
    return list(_merged(word, pair, new_id))


def _merged(word: list[int], pair: Pair, new_id: int):
    """Generator behind merge_word: yields the ids of the merged word."""
    it = iter(range(len(word)))
    for i in it:
        if word[i] == pair[0] and i + 1 < len(word) and word[i + 1] == pair[1]:
            next(it, None)  # skip the right half of the pair
            yield new_id
        else:
            yield word[i]
    # END SOLUTION


def bpe_merges(word_counts: dict[bytes, int], vocab: dict[int, bytes], num_merges: int) -> list[tuple[bytes, bytes]]:
    """Up to `num_merges` merges learned from pre-token counts, each added to `vocab` (in place)
    under the next id; fewer when no adjacent pair is left."""
    # BEGIN SOLUTION
    words = [list(w) for w in word_counts]
    freqs = list(word_counts.values())
    counts: Counter[Pair] = Counter()
    holders: defaultdict[Pair, set[int]] = defaultdict(set)
    for w, word in enumerate(words):
        for pair in itertools.pairwise(word):
            counts[pair] += freqs[w]
            holders[pair].add(w)
    merges: list[tuple[bytes, bytes]] = []
    while len(merges) < num_merges and counts:
        top = max(counts.values())
        a, b = max((p for p, c in counts.items() if c == top), key=lambda p: (vocab[p[0]], vocab[p[1]]))
        new_id = len(vocab)
        vocab[new_id] = vocab[a] + vocab[b]
        merges.append((vocab[a], vocab[b]))
        for w in holders.pop((a, b)):
            old = words[w]
            new = merge_word(old, (a, b), new_id)
            old_pairs, new_pairs = Counter(itertools.pairwise(old)), Counter(itertools.pairwise(new))
            for pair, n in old_pairs.items():
                counts[pair] -= n * freqs[w]
            for pair, n in new_pairs.items():
                counts[pair] += n * freqs[w]
                holders[pair].add(w)
            for pair in old_pairs.keys() - new_pairs.keys():
                holders[pair].discard(w)
            words[w] = new
        counts = +counts  # positive counts only: the merged pair (now 0) and vanished pairs drop out
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
    word_counts = count_pretokens_in_file(input_path, list(special_tokens), num_processes)
    merges = bpe_merges(word_counts, vocab, vocab_size - len(vocab))
    return vocab, merges
    # END SOLUTION
