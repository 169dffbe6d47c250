"""The committed record of known survivors: tests/staff/mutants/<component>.toml.

Each `[[survivor]]` names a mutant by its key (file, the mutated line's stripped text, the
mutation, and `occurrence` if that pair repeats in the file; never a line number) and says why it
may survive:

    verdict = "equivalent"   reason: why no correct test can tell it from the reference
    verdict = "needs_case"   reason: what input would kill it (a gap the public cases leave)
    verdict = "killed"       case: the case added to kill it (it must not survive again)

`judge` compares one run's survivors with the record: a survivor the record does not name, or one
recorded as killed, fails the run; a record entry that names no mutant of the run is stale.
"""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from cs336_basics.staff.mutate.mutants import Mutant

VERDICTS = {"equivalent": "reason", "needs_case": "reason", "killed": "case"}
KEY_FIELDS = ("file", "line", "mutation")


@dataclass(frozen=True)
class Entry:
    file: str
    line: str
    mutation: str
    occurrence: int
    verdict: str
    note: str  # the reason, or the killing case

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.file, self.line, self.mutation, self.occurrence)


def _entry(path: Path, i: int, table: dict) -> Entry:
    where = f"{path}: survivor {i + 1}"
    for name in KEY_FIELDS:
        if not isinstance(table.get(name), str) or not table[name]:
            raise ValueError(f"{where}: `{name}` must be a non-empty string, got {table.get(name)!r}")
    verdict = table.get("verdict")
    if verdict not in VERDICTS:
        raise ValueError(f"{where}: `verdict` must be one of {sorted(VERDICTS)}, got {verdict!r}")
    note_field = VERDICTS[verdict]
    if not isinstance(table.get(note_field), str) or not table[note_field].strip():
        raise ValueError(
            f"{where}: verdict {verdict!r} needs a non-empty `{note_field}`, got {table.get(note_field)!r}"
        )
    occurrence = table.get("occurrence", 1)
    if not isinstance(occurrence, int) or occurrence < 1:
        raise ValueError(f"{where}: `occurrence` must be an integer >= 1, got {occurrence!r}")
    return Entry(table["file"], table["line"], table["mutation"], occurrence, verdict, table[note_field])


def load(path: Path) -> list[Entry]:
    """The record's entries ([] if the file does not exist); ValueError naming the bad field."""
    if not path.exists():
        return []
    entries = [_entry(path, i, t) for i, t in enumerate(tomllib.loads(path.read_text()).get("survivor", []))]
    keys = [e.key for e in entries]
    repeated = {k for k in keys if keys.count(k) > 1}
    if repeated:
        raise ValueError(f"{path}: survivor recorded twice: {sorted(repeated)[0]}")
    return entries


@dataclass
class Judgement:
    unrecorded: list[Mutant] = field(default_factory=list)  # fail the run
    revived: list[tuple[Mutant, Entry]] = field(default_factory=list)  # recorded killed, survives: fail
    recorded: list[tuple[Mutant, Entry]] = field(default_factory=list)  # equivalent or needs_case
    stale: list[Entry] = field(default_factory=list)  # names no mutant of this run

    @property
    def failed(self) -> bool:
        return bool(self.unrecorded or self.revived)


def judge(mutants: list[Mutant], survivors: list[Mutant], entries: list[Entry]) -> Judgement:
    """`survivors` (a subset of `mutants`) against the record's `entries`."""
    by_key = {e.key: e for e in entries}
    result = Judgement()
    for m in survivors:
        entry = by_key.get(m.key)
        if entry is None:
            result.unrecorded.append(m)
        elif entry.verdict == "killed":
            result.revived.append((m, entry))
        else:
            result.recorded.append((m, entry))
    generated = {m.key for m in mutants}
    result.stale = [e for e in entries if e.key not in generated]
    return result


def toml_entry(m: Mutant) -> str:
    """A `[[survivor]]` table for `m`, its verdict left for the staff to write."""
    occurrence = f"occurrence = {m.occurrence}\n" if m.occurrence > 1 else ""
    return (
        f"[[survivor]]\nfile = {_quote(m.file)}\nline = {_quote(m.line_text)}\nmutation = {_quote(m.mutation)}\n"
        f'{occurrence}verdict = "equivalent"  # or "needs_case"; or "killed" with case = "..."\nreason = ""\n'
    )


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
