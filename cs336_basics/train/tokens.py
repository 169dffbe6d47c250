"""The corpus as token arrays, made once per run directory: the text (the project corpus's splits,
or a file split at a story boundary), a tokenizer (trained with train_bpe on the training text, or
given vocab/merges files), and each split encoded into a uint16 file (`train.u16`, `valid.u16`),
in one process per core for a large text (cut where a document starts, as train_bpe cuts its
file), read back as an np.memmap (CS336 section 5.1). `tokens.json` records
the hashes of the text and the tokenizer the arrays came from; a later run with the same ones
reuses them. Every file is written to a temporary name and renamed."""

import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from cs336_basics.atomic_write import write_atomic
from cs336_basics.corpus import EOT
from cs336_basics.tokenizer.tokenizer import Tokenizer
from cs336_basics.tokenizer.train_bpe import train_bpe
from cs336_basics.train.config import TrainConfig

VOCAB, MERGES, META = "vocab.json", "merges.txt", "tokens.json"


def read_corpus(config: TrainConfig) -> dict[str, str]:
    """{"train": text, "valid": text}; FileNotFoundError or ValueError with one clear line."""
    if not config.corpus:
        try:
            from cs336_basics.corpus import read_split
        except ModuleNotFoundError:
            raise ValueError(
                "the project corpus (cs336_basics.corpus) is not installed here; give --corpus PATH"
            ) from None
        splits = {"train": read_split("train"), "valid": read_split("valid")}
    else:
        path = Path(config.corpus)
        if not path.is_file():
            raise FileNotFoundError(f"corpus={config.corpus!r}: no such file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"corpus={config.corpus!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None
        splits = split_text(text, config.valid_fraction)
    for name, text in splits.items():
        if not text.replace(EOT, "").strip():
            raise ValueError(f"corpus={config.corpus or 'the project corpus'!r}: the {name} split holds no text")
    return splits


def split_text(text: str, valid_fraction: float) -> dict[str, str]:
    """The text's last `valid_fraction` (from the first story boundary there, if any) as "valid"."""
    cut = int(len(text) * (1 - valid_fraction))
    boundary = text.find(EOT, cut)
    if boundary != -1 and text[boundary + len(EOT) :].strip():
        cut = boundary + len(EOT)
    return {"train": text[:cut], "valid": text[cut:]}


def _sha256(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def make_tokenizer(config: TrainConfig, run_dir: Path, train_text: str) -> Tokenizer:
    """The run's tokenizer, written to run_dir/vocab.json and merges.txt: the given files, else the
    ones already there if bpe.json says they came from the same settings and text, else
    train_bpe on `train_text` (vocab_size, special token <|endoftext|>)."""
    vocab_file, merges_file, key_file = run_dir / VOCAB, run_dir / MERGES, run_dir / "bpe.json"
    key = {"vocab_size": config.vocab_size, "vocab_path": config.vocab_path, "merges_path": config.merges_path,
           "train_text_sha256": _sha256(train_text.encode())}  # fmt: skip
    if config.vocab_path:
        tokenizer = Tokenizer.from_files(config.vocab_path, config.merges_path, [EOT])
        if len(tokenizer.vocab) > config.vocab_size:
            raise ValueError(
                f"the tokenizer {config.vocab_path!r} has {len(tokenizer.vocab)} tokens: vocab_size must be at least "
                f"that, got {config.vocab_size}"
            )
    elif key_file.is_file() and json.loads(key_file.read_text()) == key and vocab_file.is_file():
        return Tokenizer.from_files(vocab_file, merges_file, [EOT])
    else:
        text_file = run_dir / "train.txt"
        write_atomic(text_file, train_text)
        vocab, merges = train_bpe(text_file, config.vocab_size, [EOT])
        tokenizer = Tokenizer(vocab, merges, [EOT])
    tokenizer.to_files(vocab_file, merges_file)
    write_atomic(key_file, json.dumps(key) + "\n")
    return tokenizer


PARALLEL_CHARS = 4 << 20  # below this, one process is faster than starting others


def document_chunks(text: str, num_chunks: int) -> list[str]:
    """`text` cut into at most `num_chunks` pieces of about equal length, every inner cut where an
    <|endoftext|> starts (train_bpe's find_chunk_boundaries cuts a file the same way). Encoding
    splits at special tokens first, so the pieces' ids, concatenated, are the whole text's."""
    cuts = [0]
    for i in range(1, num_chunks):
        found = text.find(EOT, max(len(text) * i // num_chunks, cuts[-1] + 1))
        if found == -1:
            break
        cuts.append(found)
    cuts.append(len(text))
    return [text[start:end] for start, end in zip(cuts, cuts[1:], strict=False)]


_worker_tokenizer: Tokenizer | None = None  # each encoding process's copy, set once by _init_worker


def _init_worker(tokenizer: Tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tokenizer


def _encode_chunk(text: str, tokenizer: Tokenizer | None = None) -> np.ndarray:
    """The ids of `text` as uint16, read line by line (encode_iterable: bounded memory)."""
    ids = np.fromiter((tokenizer or _worker_tokenizer).encode_iterable(io.StringIO(text)), dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= 1 << 16):
        raise ValueError(f"token ids must fit uint16 (vocab_size <= 65536), got ids up to {ids.max()}")
    return ids.astype(np.uint16)


def encode_text(tokenizer: Tokenizer, text: str, num_processes: int | None = None) -> np.ndarray:
    """Tokenizer.encode of `text` as uint16, in `num_processes` processes (default: one per CPU for
    a text of at least PARALLEL_CHARS characters, else one), each encoding document_chunks of it."""
    if num_processes is None:
        num_processes = min(os.cpu_count() or 1, 1 + len(text) // PARALLEL_CHARS)
    chunks = document_chunks(text, num_processes)
    if len(chunks) <= 1:
        return _encode_chunk(text, tokenizer)
    import multiprocessing

    with multiprocessing.get_context().Pool(len(chunks), _init_worker, (tokenizer,)) as pool:
        return np.concatenate(pool.map(_encode_chunk, chunks, chunksize=1))


def _encode(tokenizer: Tokenizer, text: str, out: Path) -> int:
    ids = encode_text(tokenizer, text)
    write_atomic(out, ids.tobytes())
    return int(ids.size)


def encode_splits(tokenizer: Tokenizer, run_dir: Path, splits: dict[str, str]) -> None:
    """run_dir/{split}.u16 for each split, unless tokens.json says they hold this text and tokenizer."""
    key = {
        "text_sha256": _sha256(*(splits[s].encode() for s in sorted(splits))),
        "tokenizer_sha256": _sha256((run_dir / VOCAB).read_bytes(), (run_dir / MERGES).read_bytes()),
    }
    meta_file = run_dir / META
    if meta_file.is_file():
        meta = json.loads(meta_file.read_text())
        if all(meta.get(k) == v for k, v in key.items()) and all((run_dir / f"{s}.u16").is_file() for s in splits):
            return
    start = time.perf_counter()
    counts = {f"{s}_tokens": _encode(tokenizer, splits[s], run_dir / f"{s}.u16") for s in sorted(splits)}
    seconds = time.perf_counter() - start
    write_atomic(meta_file, json.dumps({**key, **counts}, indent=1) + "\n")
    chars = sum(len(text) for text in splits.values())
    print(f"encoded {chars:,} characters into {sum(counts.values()):,} tokens in {seconds:.1f} s", file=sys.stderr)


def load_split(run_dir: Path, split: str, context_length: int) -> np.memmap:
    """The encoded split as a read-only memmap; ValueError if it is too short for one window."""
    path = run_dir / f"{split}.u16"
    tokens = np.memmap(path, dtype=np.uint16, mode="r") if path.stat().st_size else np.zeros(0, np.uint16)
    if len(tokens) < context_length + 1:
        raise ValueError(
            f"the {split} split holds {len(tokens)} tokens, fewer than context_length + 1 = {context_length + 1}: "
            "give a longer corpus or a shorter context_length"
        )
    return tokens
