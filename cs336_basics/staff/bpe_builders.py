"""Input builders for the BPE cases (train_bpe, tokenizer), on seeded synthetic text
(cs336_basics/tokenizer/synthetic.py), never a download. Witness: the texts to encode hold
`<|endoftext|>` twice in a row, so that `<|endoftext|><|endoftext|>`, when listed, must match
as one token."""

import os
import tempfile

import numpy as np

from cs336_basics.tokenizer import tensors as T
from cs336_basics.tokenizer.synthetic import synthetic_text
from cs336_basics.tokenizer.train_bpe import train_bpe

Rng = np.random.Generator


def train_bpe_case(n_docs: int, vocab_size: int, special_tokens: list[str], **text_kw):
    """A corpus of synthetic text and the vocabulary size to train to."""

    def make(rng: Rng) -> dict:
        text = synthetic_text(rng, n_docs, special_tokens, **text_kw)
        return dict(corpus=T.text_to_tensor(text), vocab_size=vocab_size, special_tokens=list(special_tokens))

    return make


def trained_vocabulary(rng: Rng, n_docs: int, vocab_size: int, special_tokens: list[str], **text_kw) -> dict:
    """token_bytes, token_offsets and merges of train_bpe (the reference) on a synthetic corpus."""
    text = synthetic_text(rng, n_docs, special_tokens, **text_kw)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        vocab, merges = train_bpe(path, vocab_size, special_tokens, num_processes=1)
    token_bytes, token_offsets = T.vocab_to_tensors(vocab)
    return dict(token_bytes=token_bytes, token_offsets=token_offsets, merges=T.merges_to_tensor(merges, vocab))


def tokenizer_case(
    vocab_size: int,
    special_tokens: list[str] | None,
    n_docs: int = 300,
    text_docs: int = 20,
    what: str = "text",
    **text_kw,
):
    """A vocabulary trained on one synthetic corpus and, from the same generator, another text
    to encode (what="text"), or token ids to decode (what="ids": the text's ids with single bytes
    of split multi-byte characters among them)."""

    def make(rng: Rng) -> dict:
        specials = list(special_tokens or [])
        kw = trained_vocabulary(rng, n_docs, vocab_size, specials, **text_kw)
        text = synthetic_text(rng, text_docs, specials, unicode_share=0.15)
        kw["special_tokens"] = special_tokens
        if what == "text":
            return kw | dict(text=T.text_to_tensor(text))
        from cs336_basics.tokenizer.tokenizer import Tokenizer

        vocab = T.tensors_to_vocab(kw["token_bytes"], kw["token_offsets"])
        ids = Tokenizer(vocab, T.tensor_to_merges(kw["merges"], vocab), special_tokens).encode(text)
        partial = [b for b in "€😀é".encode() if b >= 0x80]  # leading and continuation bytes alone
        for position in sorted(rng.integers(0, len(ids), size=6).tolist(), reverse=True):
            ids.insert(position, partial[int(rng.integers(0, len(partial)))])  # ids 0-255 are the bytes
        import torch

        return kw | dict(ids=torch.tensor(ids, dtype=torch.int64))

    return make
