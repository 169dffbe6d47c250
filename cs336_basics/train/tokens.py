"""The corpus as token arrays, made once per run directory: the text (the project corpus's splits,
or a file split at a story boundary), a tokenizer (trained with train_bpe on the training text, or
given vocab/merges files), and each split encoded with Tokenizer.encode_iterable into a uint16 file
(`train.u16`, `valid.u16`) read back as an np.memmap (CS336 section 5.1). `tokens.json` records
the hashes of the text and the tokenizer the arrays came from; a later run with the same ones
reuses them. Every file is written to a temporary name and renamed."""

import hashlib
import io
import json
from pathlib import Path

import numpy as np

from cs336_basics.atomic_write import write_atomic
from cs336_basics.tokenizer.tokenizer import Tokenizer
from cs336_basics.tokenizer.train_bpe import train_bpe
from cs336_basics.train.config import EOT, TrainConfig

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


def _encode(tokenizer: Tokenizer, text: str, out: Path) -> int:
    ids = np.fromiter(tokenizer.encode_iterable(io.StringIO(text)), dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= 1 << 16):
        raise ValueError(f"token ids must fit uint16 (vocab_size <= 65536), got ids up to {ids.max()}")
    write_atomic(out, ids.astype(np.uint16).tobytes())
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
    counts = {f"{s}_tokens": _encode(tokenizer, splits[s], run_dir / f"{s}.u16") for s in sorted(splits)}
    write_atomic(meta_file, json.dumps({**key, **counts}, indent=1) + "\n")


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
