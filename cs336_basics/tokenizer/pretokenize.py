"""Pre-tokenization: the text is split on the special tokens first (they are never merged
into, nor counted as, text), then each piece into pre-tokens with GPT-2's pattern (Radford et
al. 2019; openai/gpt-2 src/encoder.py, as tiktoken's "gpt2" encoding writes it). BPE merges
never cross a pre-token boundary."""

import os
from collections import Counter
from collections.abc import Iterator

import regex

# GPT-2's pre-tokenizer pattern: contractions, letters, digits and other symbols (each with at
# most one leading space), then whitespace runs (a run before a non-space keeps its last space for
# the next pre-token). \p{L} and \p{N} need the `regex` package.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PRETOKEN_RE = regex.compile(GPT2_PATTERN)


def special_tokens_pattern(special_tokens: list[str] | None) -> regex.Pattern | None:
    """An alternation of the special tokens, longest first, so that where two overlap
    (`<|endoftext|><|endoftext|>` and `<|endoftext|>`) the longer one matches; None if there are none."""
    if not special_tokens:
        return None
    return regex.compile("|".join(regex.escape(s) for s in sorted(set(special_tokens), key=len, reverse=True)))


def split_on_special_tokens(text: str, special_tokens: list[str] | None) -> list[str]:
    """The pieces of `text` between special tokens (the specials themselves dropped), in order."""
    # BEGIN SOLUTION
    pattern = special_tokens_pattern(special_tokens)
    return [text] if pattern is None else pattern.split(text)
    # END SOLUTION


def pretokenize(text: str) -> Iterator[str]:
    """The pre-tokens of a text that holds no special token: GPT-2's pattern, match by match."""
    # BEGIN SOLUTION
    for match in PRETOKEN_RE.finditer(text):
        yield match.group()
    # END SOLUTION


def count_pretokens(text: str, special_tokens: list[str] | None) -> Counter[bytes]:
    """How often each pre-token (as UTF-8 bytes) occurs in `text`, special tokens left out."""
    # BEGIN SOLUTION
    counts: Counter[str] = Counter()
    for piece in split_on_special_tokens(text, special_tokens):
        counts.update(PRETOKEN_RE.findall(piece))
    return Counter({token.encode("utf-8"): n for token, n in counts.items()})
    # END SOLUTION


def _next_special_token(f, start: int, size: int, needles: list[bytes]) -> int | None:
    """The offset of the first special token at or after `start`, reading blocks that overlap by
    the longest token's length (so none is missed at a seam); None if there is none."""
    overlap = max(len(n) for n in needles)
    position = start
    while position < size:
        f.seek(position)
        block = f.read(SCAN_BYTES + overlap)
        hits = [j for j in (block.find(n) for n in needles) if j >= 0]
        if hits:
            return position + min(hits)
        position += SCAN_BYTES
    return None


SCAN_BYTES = 1 << 20


def find_chunk_boundaries(path: str | os.PathLike, num_chunks: int, special_tokens: list[str]) -> list[int]:
    """Byte offsets 0 = b_0 < b_1 < ... < b_k = file size (k <= num_chunks) such that every inner
    boundary is where a special token starts: no pre-token crosses one, so the chunks can be
    counted apart (CS336's pretokenization_example.py does the same with one token). Without
    special tokens the file is one chunk. The file is scanned in blocks, never read whole."""
    size = os.path.getsize(path)
    if not special_tokens or num_chunks <= 1 or size == 0:
        return [0, size]
    needles = [s.encode("utf-8") for s in special_tokens]
    boundaries = [0]
    with open(path, "rb") as f:
        for i in range(1, num_chunks):
            found = _next_special_token(f, max(size * i // num_chunks, boundaries[-1] + 1), size, needles)
            if found is None:
                break
            boundaries.append(found)
    return boundaries + [size]


def _count_chunk(path: str, start: int, end: int, special_tokens: list[str]) -> Counter[bytes]:
    with open(path, "rb") as f:
        f.seek(start)
        text = f.read(end - start).decode("utf-8", errors="strict")
    return count_pretokens(text, special_tokens)


CHUNK_BYTES = 16 << 20  # at most this much text (a few times more in memory) per chunk counted at once
PARALLEL_BYTES = 4 << 20  # below this, one process is faster than starting others


def count_pretokens_in_file(
    path: str | os.PathLike, special_tokens: list[str], num_processes: int | None = None
) -> Counter[bytes]:
    """count_pretokens over a whole file, in chunks cut where special tokens start
    (find_chunk_boundaries), counted in `num_processes` processes (default: one per CPU for a
    file of at least PARALLEL_BYTES, else one) and summed."""
    size = os.path.getsize(path)
    if num_processes is None:
        num_processes = min(os.cpu_count() or 1, 1 + size // PARALLEL_BYTES)
    num_chunks = max(num_processes, -(-size // CHUNK_BYTES))
    bounds = find_chunk_boundaries(path, num_chunks, special_tokens)
    jobs = [(str(path), s, e, list(special_tokens)) for s, e in zip(bounds, bounds[1:], strict=False)]
    total: Counter[bytes] = Counter()
    if num_processes <= 1 or len(jobs) <= 1:
        for job in jobs:
            total.update(_count_chunk(*job))
        return total
    import multiprocessing

    with multiprocessing.get_context().Pool(min(num_processes, len(jobs))) as pool:
        for counts in pool.starmap(_count_chunk, jobs, chunksize=1):
            total.update(counts)
    return total
