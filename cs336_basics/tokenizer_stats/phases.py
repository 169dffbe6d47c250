"""train_bpe as its three phases, each timed in CPU seconds of this process: pre-tokenization
(split_on_special_tokens, then pretokenize's matches), counting (each pre-token's UTF-8 bytes
counted) and merging (bpe_merges). One process, so the phases add up to what they cost; the
result is train_bpe's (vocab, merges) for the same text."""

import time
from collections import Counter
from dataclasses import dataclass

from cs336_basics.tokenizer.pretokenize import pretokenize, split_on_special_tokens
from cs336_basics.tokenizer.train_bpe import bpe_merges


@dataclass(frozen=True)
class BPETraining:
    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    seconds: dict[str, float]  # CPU seconds of "pre-tokenization", "counting", "merging"
    pretokens: int  # how many pre-tokens the text holds (with repeats)
    requested: int  # the vocab_size asked for; len(vocab) is what was reached
    unmerged_pairs: bool  # whether any pre-token is still more than one token after the merges


def short_of_vocabulary(run: BPETraining) -> str | None:
    """One line saying that training stopped short of the requested vocabulary, and why where it is
    known; None if it reached it."""
    if len(run.vocab) >= run.requested:
        return None
    why = ("train_bpe stopped with pairs still left to merge" if run.unmerged_pairs
           else "no pair left to merge: every pre-token of the text is already one token")  # fmt: skip
    return f"stopped at {len(run.vocab):,} of {run.requested:,} requested tokens ({why})"


def _any_pair_left(words, merges: list[tuple[bytes, bytes]]) -> bool:
    """Whether any of the words (bytes) is more than one token after BPE with these merges."""
    rank = {pair: i for i, pair in enumerate(merges)}
    for word in words:
        parts = [bytes([b]) for b in word]
        while len(parts) > 1:
            pairs = [(rank.get(pair, len(rank)), i) for i, pair in enumerate(zip(parts, parts[1:], strict=False))]
            best, i = min(pairs)
            if best == len(rank):
                return True
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return False


def train_bpe_by_phase(text: str, vocab_size: int, special_tokens: list[str]) -> BPETraining:
    """(vocab, merges) of byte-level BPE on `text`, as train_bpe makes them, with each phase timed."""
    minimum = 256 + len(special_tokens)
    if vocab_size < minimum:
        raise ValueError(f"vocab_size must be at least 256 bytes + {len(special_tokens)} specials = {minimum}, "
                         f"got {vocab_size}")  # fmt: skip
    seconds, clock = {}, time.process_time()
    pretokens = [p for piece in split_on_special_tokens(text, special_tokens) for p in pretokenize(piece)]
    seconds["pre-tokenization"], clock = time.process_time() - clock, time.process_time()
    word_counts = dict(Counter(p.encode("utf-8") for p in pretokens))
    seconds["counting"], clock = time.process_time() - clock, time.process_time()
    vocab = {b: bytes([b]) for b in range(256)}
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    merges = bpe_merges(word_counts, vocab, vocab_size - len(vocab))
    seconds["merging"] = time.process_time() - clock
    short = len(vocab) < vocab_size  # only then is it worth asking why
    left = short and _any_pair_left(word_counts, merges)
    return BPETraining(vocab, merges, seconds, len(pretokens), vocab_size, left)
