"""Staff only: the one builder of the hostile samples in tests/staff/hostile/.

A sample is a folder tests/staff/hostile/<name>/ holding README.md (the attack, what happened
before the fix, what the grader does now) and files in one layout:

    overlay/<path>   replaces the reference's file at <path> (or creates it);
    append/<path>    is appended to the reference's file at <path>, after a blank line, so a later
                     `def silu` replaces the reference's (or creates the file).

`build(name, reference, out)` copies the reference (the handout with its solutions restored) to
out/<name> and applies the sample's overlay files, then its append files.
"""

import shutil
from dataclasses import dataclass
from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parent / "hostile"
KINDS = ("overlay", "append")  # the order they are applied in


@dataclass(frozen=True)
class SampleFile:
    kind: str  # "overlay" or "append"
    target: Path  # the path inside the submission, e.g. cs336_basics/nn/functional.py
    source: Path  # the sample's file

    def text(self) -> str:
        return self.source.read_text()


def sample_files(name: str) -> list[SampleFile]:
    """The sample's overlay files, then its append files, each sorted by target path."""
    files = []
    for kind in KINDS:
        base = SAMPLES_DIR / name / kind
        sources = sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        files += [SampleFile(kind, src.relative_to(base), src) for src in sources]
    return files


def apply(sample: SampleFile, root: Path) -> None:
    """Write one sample file into the submission at root."""
    target = root / sample.target
    target.parent.mkdir(parents=True, exist_ok=True)
    before = target.read_text() if sample.kind == "append" and target.exists() else ""
    target.write_text(before + ("\n\n" if before else "") + sample.text())


def build(name: str, reference: Path, out: Path) -> Path:
    """The reference with sample `name` applied, at out/name."""
    root = shutil.copytree(reference, out / name)
    for sample in sample_files(name):
        apply(sample, root)
    return root
