"""Staff only: the one builder of the hostile samples in tests/staff/hostile/.

A sample is a folder tests/staff/hostile/<name>/ holding README.md (the attack, what happened
before the fix, what the grader does now) and files in one layout:

    overlay/<path>   replaces the base's file at <path> (or creates it);
    append/<path>    is appended to the base's file at <path>, after a blank line, so a later
                     `def silu` replaces the base's (or creates the file).

The base is the reference (the handout with its solutions restored), or the untouched handout
when the README has the line `base: handout` (a stub package whose import-time code cheats).

Run-time values (a path of this checkout, a limit from grading.toml, a table computed from the
fixtures) reach a sample through one hook: each `{{KEY}}` in a sample file is replaced by
`repr(values[KEY])`, a Python literal; a key the caller did not give is an error naming it.

`build(name, reference, out, values=..., handout=...)` copies the base to out/<name> and applies
the sample's overlay files, then its append files.
"""

import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

SAMPLES_DIR = Path(__file__).resolve().parent / "hostile"
KINDS = ("overlay", "append")  # the order they are applied in
PLACEHOLDER = re.compile(r"\{\{([A-Z][A-Z0-9_]*)\}\}")


def readme_field(name: str, key: str, samples: Path | None = None) -> str | None:
    """The value of the sample README's line `key: value`, or None."""
    samples = samples or SAMPLES_DIR
    found = re.search(rf"^{key}: *(.+)$", (samples / name / "README.md").read_text(), re.M)
    return found.group(1).strip() if found else None


@dataclass(frozen=True)
class SampleFile:
    kind: str  # "overlay" or "append"
    target: Path  # the path inside the submission, e.g. cs336_basics/nn/functional.py
    source: Path  # the sample's file

    def placeholders(self) -> set[str]:
        """The KEYs of the file's {{KEY}}s."""
        return set(PLACEHOLDER.findall(self.source.read_text()))

    def text(self, values: dict | None = None) -> str:
        """The file's text with each {{KEY}} replaced by repr(values[KEY])."""
        raw = self.source.read_text()
        missing = sorted(k for k in self.placeholders() if k not in (values or {}))
        if missing:
            raise KeyError(f"{self.source}: values= needs {missing}, got {sorted(values or {})}")
        return PLACEHOLDER.sub(lambda m: repr(values[m.group(1)]), raw)


def sample_files(name: str, samples: Path | None = None) -> list[SampleFile]:
    """The sample's overlay files, then its append files, each sorted by target path."""
    samples = samples or SAMPLES_DIR
    files = []
    for kind in KINDS:
        base = samples / name / kind
        sources = sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        files += [SampleFile(kind, src.relative_to(base), src) for src in sources]
    return files


def apply(sample: SampleFile, root: Path, values: dict | None = None) -> None:
    """Write one sample file into the submission at root."""
    target = root / sample.target
    target.parent.mkdir(parents=True, exist_ok=True)
    before = target.read_text() if sample.kind == "append" and target.exists() else ""
    target.write_text(before + ("\n\n" if before else "") + sample.text(values))


def base_of(name: str, reference: Path, handout: Path | None, samples: Path | None = None) -> Path:
    """The folder sample `name` is applied to: its README's `base:` (reference by default)."""
    base = readme_field(name, "base", samples) or "reference"
    if base not in ("reference", "handout"):
        raise ValueError(f"{name}/README.md: base must be 'reference' or 'handout', got {base!r}")
    if base == "handout" and handout is None:
        raise ValueError(f"sample {name} applies to the handout: build(..., handout=PATH) needs it, got None")
    return reference if base == "reference" else handout


def build(
    name: str,
    reference: Path,
    out: Path,
    values: dict | None = None,
    handout: Path | None = None,
    samples: Path | None = None,
) -> Path:
    """The base (reference, or handout for `base: handout`) with sample `name` of the folder
    `samples` (tests/staff/hostile/ by default) applied, at out/name."""
    root = shutil.copytree(base_of(name, reference, handout, samples), out / name)
    for sample in sample_files(name, samples):
        apply(sample, root, values)
    return root


@contextmanager
def without_source_rule():
    """Grading with the source rule off (grade._violations finds nothing): the sandbox and the
    recorder must each hold alone, so their tests grade without the rule that would zero these
    samples first; test_hostile.py and test_rule_bank.py grade with every layer."""
    from cs336_basics.staff.grader import grade

    with mock.patch.object(grade, "_violations", lambda package, report: ()):
        yield
