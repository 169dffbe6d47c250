"""A byte-level BPE tokenizer (GPT-2's, Radford et al. 2019) from a vocabulary and merges:
special tokens are matched first (longest first where they overlap), the text between them is
pre-tokenized with GPT-2's pattern, and within each pre-token the merges are applied in the
order they were learned (lowest rank first), as GPT-2's encoder.py, tiktoken and Hugging Face
tokenizers do. Decoding joins the tokens' bytes and replaces invalid UTF-8 with U+FFFD."""

import functools
import itertools
import json
import os
from collections.abc import Iterable, Iterator

from cs336_basics.atomic_write import write_atomic
from cs336_basics.tokenizer.byte_unicode import from_printable, to_printable
from cs336_basics.tokenizer.pretokenize import PRETOKEN_RE, pretokenize, special_tokens_pattern
from cs336_basics.tokenizer.train_bpe import merge_word

Merges = list[tuple[bytes, bytes]]


def _all_of(kind: type, values: Iterable) -> bool:
    """Every value is an instance of `kind` (checked once per distinct type)."""
    return all(issubclass(t, kind) for t in set(map(type, values)))


def _check_vocab_and_merges(vocab: dict[int, bytes], merges: Merges) -> None:
    if not isinstance(vocab, dict) or not (_all_of(int, vocab) and _all_of(bytes, vocab.values())):
        raise TypeError("vocab must be a dict[int, bytes] (token id -> the token's bytes)")
    if not isinstance(merges, (list, tuple)) or not (
        _all_of(tuple, merges)
        and set(map(len, merges)) <= {2}
        and _all_of(bytes, itertools.chain.from_iterable(merges))
    ):
        raise TypeError("merges must be a list of (bytes, bytes) pairs")


class Tokenizer:
    """encode(text) -> ids, decode(ids) -> text, encode_iterable(lines) -> ids, lazily."""

    def __init__(self, vocab: dict[int, bytes], merges: Merges, special_tokens: list[str] | None = None):
        """The special tokens not already in `vocab` are added to it under new ids. Where two ids
        hold the same bytes, encoding gives the smaller."""
        _check_vocab_and_merges(vocab, merges)
        if special_tokens is not None and (
            not isinstance(special_tokens, (list, tuple)) or not all(isinstance(s, str) and s for s in special_tokens)
        ):
            raise TypeError(f"special_tokens must be a list of non-empty str or None, got {special_tokens!r}")
        self.vocab = dict(vocab)
        self.special_tokens = list(dict.fromkeys(special_tokens or []))
        self.id_of: dict[bytes, int] = {}
        for i in sorted(self.vocab, reverse=True):  # the smallest id of each token wins
            self.id_of[self.vocab[i]] = i
        for token in self.special_tokens:
            if token.encode("utf-8") not in self.id_of:
                new_id = max(self.vocab, default=-1) + 1
                self.vocab[new_id] = token.encode("utf-8")
                self.id_of[token.encode("utf-8")] = new_id
        self.merges = list(merges)
        # (left id, right id) -> (rank, merged id)
        self.ranks: dict[tuple[int, int], tuple[int, int]] = {}
        id_of = self.id_of.get
        for rank, (a, b) in enumerate(self.merges):
            left, right, merged = id_of(a), id_of(b), id_of(a + b)
            if left is None or right is None or merged is None:
                part = next(p for p in (a, b, a + b) if p not in self.id_of)
                raise ValueError(f"merges[{rank}] = {(a, b)!r}: {part!r} is not in the vocabulary")
            self.ranks.setdefault((left, right), (rank, merged))
        # a vocabulary may lack bytes no text it was trained on holds (SmolLM2's lacks 21, 0xC0 among them)
        self.byte_ids = [self.id_of.get(bytes([b])) for b in range(256)]
        self.special_pattern = special_tokens_pattern(self.special_tokens)
        self._cache: dict[str, list[int]] = {}
        self._encode_cached = functools.lru_cache(maxsize=1 << 16)(self._encode_pretoken_tuple)

    @classmethod
    def from_files(
        cls,
        vocab_filepath: str | os.PathLike,
        merges_filepath: str | os.PathLike,
        special_tokens: list[str] | None = None,
    ) -> "Tokenizer":
        """From GPT-2's file format (also Hugging Face's): vocab.json maps each token, written with
        GPT-2's byte-to-character table (byte_unicode.py), to its id; merges.txt holds one merge per
        line, the two tokens separated by a space (a first line starting with `#version` is skipped)."""
        with open(vocab_filepath, encoding="utf-8") as f:
            vocab = {int(i): from_printable(token) for token, i in json.load(f).items()}
        merges = []
        with open(merges_filepath, encoding="utf-8") as f:
            for n, line in enumerate(f):
                line = line.rstrip("\n")
                if not line or (n == 0 and line.startswith("#version")):
                    continue
                parts = line.split(" ")
                if len(parts) != 2:
                    raise ValueError(
                        f"{merges_filepath}:{n + 1}: expected two tokens separated by a space, got {line!r}"
                    )
                merges.append((from_printable(parts[0]), from_printable(parts[1])))
        return cls(vocab, merges, special_tokens)

    def to_files(self, vocab_filepath: str | os.PathLike, merges_filepath: str | os.PathLike) -> None:
        """Write the vocabulary and merges in the format from_files reads (each file written to a
        temporary name, then renamed)."""
        vocab = {to_printable(token): i for i, token in sorted(self.vocab.items(), reverse=True)}
        merges = "".join(f"{to_printable(a)} {to_printable(b)}\n" for a, b in self.merges)
        vocab_text = json.dumps(vocab, ensure_ascii=False, indent=0)
        for path, text in ((vocab_filepath, vocab_text), (merges_filepath, merges)):
            write_atomic(path, text)

    def _encode_pretoken(self, pretoken: str) -> list[int]:
        """The ids of one pre-token: its bytes, then repeatedly the adjacent pair of lowest rank
        merged (every occurrence of it, left to right), until no pair has a rank."""
        ids = [self.byte_ids[b] for b in pretoken.encode("utf-8")]
        if None in ids:
            missing = next(b for b in pretoken.encode("utf-8") if self.byte_ids[b] is None)
            raise ValueError(f"cannot encode {pretoken!r}: byte {missing:#04x} is not in the vocabulary")
        # BEGIN SOLUTION
        ranks = self.ranks
        no_rank = (len(self.merges), -1)
        while len(ids) > 1:
            pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, no_rank))
            rank, merged = ranks.get(pair, no_rank)
            if merged < 0:
                break
            ids = merge_word(ids, pair, merged)
        return ids
        # END SOLUTION

    def _encode_pretoken_tuple(self, pretoken: str) -> tuple[int, ...]:
        return tuple(self._encode_pretoken(pretoken))

    def _encode_text(self, text: str) -> list[int]:
        """The ids of a text that holds no special token."""
        # BEGIN SOLUTION
        return list(itertools.chain.from_iterable(map(self._encode_cached, pretokenize(text))))
        # END SOLUTION

    def encode(self, text: str) -> list[int]:
        """The token ids of `text`: special tokens as their own ids, the rest by BPE per pre-token."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        # BEGIN SOLUTION
        return list(itertools.chain.from_iterable(self._pieces(text)))
        # END SOLUTION

    def _pieces(self, text: str) -> Iterator[list[int]]:
        """The ids of text between special tokens, and each special token's id, in order."""
        if self.special_pattern is None:
            yield self._encode_text(text)
            return
        start = 0
        for match in self.special_pattern.finditer(text):
            yield self._encode_text(text[start : match.start()])
            yield [self.id_of[match.group().encode("utf-8")]]
            start = match.end()
        yield self._encode_text(text[start:])

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """The ids of the concatenated strings (a file's lines, say), exactly those of
        encode("".join(iterable)), produced lazily: only a tail that more text could still
        change is held back (the last two pre-tokens, and any end that may begin a special
        token), so memory stays bounded whatever the total length."""
        # BEGIN SOLUTION
        held = ""
        for chunk in iterable:
            if not isinstance(chunk, str):
                raise TypeError(f"encode_iterable takes strings, got a {type(chunk).__name__}")
            held += chunk
            cut = self._safe_prefix_length(held)
            if cut > 0:
                yield from self.encode(held[:cut])
                held = held[cut:]
        yield from self.encode(held)
        # END SOLUTION

    def _safe_prefix_length(self, text: str) -> int:
        """How much of `text` encodes the same whatever text follows: up to the start of the last
        two pre-tokens after the last special token (GPT-2's pattern looks at most two pre-tokens
        back: `'` then `l` becomes `'ll`), never right after a whitespace run (`\n\n` then `x` is
        `\n`, `\n`, `x`; at the end it is one `\n\n`), and before any end of `text` that begins a
        special token."""
        end = len(text)
        for token in self.special_tokens:  # a tail that is a proper prefix of a special token
            for k in range(min(len(token) - 1, len(text)), 0, -1):
                if token.startswith(text[-k:]):
                    end = min(end, len(text) - k)
                    break
        start = 0
        if self.special_pattern is not None:
            for match in self.special_pattern.finditer(text):
                if match.end() > end:  # a special token that crosses the held tail is held too
                    end = min(end, match.start())
                    break
                start = match.end()
        starts = [m.start() for m in PRETOKEN_RE.finditer(text, start, end)]
        i = len(starts) - 2
        while i > 0 and text[starts[i] - 1].isspace():  # a whitespace run splits by what follows it
            i -= 1
        return start if i < 1 else starts[i]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids`: their bytes joined, decoded as UTF-8 with invalid sequences (a
        character split between tokens at the end, say) replaced by U+FFFD."""
        ids = list(ids)
        unknown = [i for i in ids if i not in self.vocab]
        if unknown:
            raise ValueError(f"ids {unknown[:5]} are not in the vocabulary (ids {min(self.vocab)}..{max(self.vocab)})")
        # BEGIN SOLUTION
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")
        # END SOLUTION
