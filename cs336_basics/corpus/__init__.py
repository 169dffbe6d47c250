"""A TinyStories-style corpus (Eldan & Li 2023, "TinyStories: How Small Can Language Models Be and
Still Speak Coherent English?") written by this project's reference model on the pinned
SmolLM2-135M-Instruct weights, stored xz-compressed inside the package so that it installs offline.

    from cs336_basics.corpus import read_split, SPLITS, EOT
    text = read_split("train")  # the stories, each followed by EOT, as TinyStories' text files

data/manifest.json says how it was made (seed, word lists, features, model file hash, sampling,
counts, sha256 of each split's text). The course staff wrote it, and check it, with their own tools."""

import json
import lzma
from pathlib import Path

SPLITS = ("train", "valid")
EOT = "<|endoftext|>"  # TinyStories' separator between stories (GPT-2's end-of-text token)
DATA = Path(__file__).resolve().parent / "data"


def split_path(split: str) -> Path:
    """The compressed text file of `split`."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return DATA / f"{split}.txt.xz"


def read_split(split: str) -> str:
    """The text of `split` ("train" or "valid"): stories separated by EOT, each followed by EOT."""
    path = split_path(split)
    if not path.is_file():
        raise FileNotFoundError(f"no corpus file {path}: the package is incomplete (reinstall it)")
    return lzma.decompress(path.read_bytes()).decode("utf-8")


def read_stories(split: str) -> list[str]:
    """The stories of `split`, without their separators."""
    return read_split(split).split(EOT)[:-1]


def manifest() -> dict:
    """data/manifest.json: how the stored corpus was made, and what it holds."""
    return json.loads((DATA / "manifest.json").read_text())
