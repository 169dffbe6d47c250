"""What a tokenizer does to a corpus: documents drawn from it with a seeded generator, the
compression ratio (UTF-8 bytes / tokens), the encoding throughput (bytes per CPU second of this
process) and the longest tokens of a vocabulary."""

import time

import numpy as np

from cs336_basics.corpus import EOT


def documents(text: str) -> list[str]:
    """The non-empty documents of a text whose documents are separated by <|endoftext|>."""
    return [d.strip() for d in text.split(EOT) if d.strip()]


def sample_documents(docs: list[str], n: int, seed: int = 0) -> list[str]:
    """n of the documents (all of them if there are fewer), drawn without replacement by PCG64(seed)."""
    if n < 1:
        raise ValueError(f"the number of documents must be >= 1, got {n}")
    if not docs:
        raise ValueError("the corpus holds no documents")
    picks = np.random.default_rng(seed).choice(len(docs), size=min(n, len(docs)), replace=False)
    return [docs[i] for i in sorted(picks)]


def compression_ratio(tokenizer, docs: list[str]) -> float:
    """UTF-8 bytes per token over the documents together."""
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    n_tokens = sum(len(tokenizer.encode(d)) for d in docs)
    return n_bytes / max(n_tokens, 1)


def encode_throughput(tokenizer, docs: list[str]) -> float:
    """Bytes encoded per CPU second (this process's), over the documents."""
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    start = time.process_time()
    for d in docs:
        tokenizer.encode(d)
    return n_bytes / max(time.process_time() - start, 1e-9)


def longest_tokens(vocab: dict[int, bytes], k: int) -> list[tuple[int, bytes]]:
    """The k longest tokens as (id, bytes), longest first; equal lengths by id."""
    return sorted(vocab.items(), key=lambda item: (-len(item[1]), item[0]))[:k]
