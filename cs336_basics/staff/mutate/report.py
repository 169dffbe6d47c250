"""What `cs336 mutate` prints after its runs: one table row per component (killed / total,
survived, timeout, wall seconds), then each survivor the record does not excuse with its diff and a
`[[survivor]]` table to start its record from, the excused ones one line each, and stale entries."""

from cs336_basics.staff.mutate.record import toml_entry
from cs336_basics.staff.mutate.session import ComponentResult


def table(results: list[ComponentResult]) -> str:
    rows = [
        "| component | killed/total | survived | timeout | recorded | unrecorded | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        j = r.judgement
        total = len(r.mutants)
        rows.append(
            f"| {r.component} | {r.count('killed')}/{total} | {r.count('survived')} | {r.count('timeout')} "
            f"| {len(j.recorded)} | {len(j.unrecorded) + len(j.revived)} | {r.wall_s} |"
        )
    return "\n".join(rows)


def survivors(result: ComponentResult, verbose: bool = False) -> str:
    """The survivors of one component: unexcused ones with their diff, excused ones in one line."""
    j, out = result.judgement, []
    for m in j.unrecorded:
        out.append(f"\nUNRECORDED survivor of {result.component} ({m.qualname}, line {m.line}): {m.mutation}")
        out.append(m.diff(result.originals[m.file]).rstrip())
        out.append(f"record it in {result.component}.toml, or add a case that kills it:\n{toml_entry(m)}")
    for m, e in j.revived:
        out.append(f"\nRECORDED AS KILLED (by {e.note}) but survives: {m.file}:{m.line} {m.mutation}")
        out.append(m.diff(result.originals[m.file]).rstrip())
    for m, e in j.recorded:
        out.append(f"{result.component}: {e.verdict}: {m.file}:{m.line} {m.mutation} ({e.note})")
        if verbose:
            out.append(m.diff(result.originals[m.file]).rstrip())
    for e in j.stale:
        out.append(f"{result.component}: stale record (no such mutant now): {e.file}: {e.line!r} {e.mutation}")
    return "\n".join(out)
