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
    return BPETraining(vocab, merges, seconds, len(pretokens))
