"""Write the Markdown summary of a held-out bank run (run.py's JSON) with a judge's verdicts.

    python tests/staff/heldout/summarize.py RESULTS.json [--judgements J.toml] [--out SUMMARY.md]

The judgements file maps each mistake id to a table {verdict = names|describes|related|wrong|
nothing, note = "..."} (README.md states the criteria); killed mistakes without a verdict are
counted as unjudged.
"""

import argparse
import json
import tomllib
from pathlib import Path

VERDICTS = ("names", "describes", "related", "wrong", "nothing")
SHOWN_LINES = 8


def _records(results: dict) -> dict[str, dict]:
    return {k: v for k, v in results.items() if k != "__meta__" and not k.startswith("reference/")}


def _full_marks(r: dict) -> bool:
    return r.get("score") is not None and r.get("max_score") is not None and r["score"] >= r["max_score"] - 1e-9


def component_table(records: dict, verdicts: dict) -> list[str]:
    rows = [
        "| component | written | killed | " + " | ".join(VERDICTS) + " | unjudged | survived | killed, full marks |"
    ]
    rows.append("|" + "---|" * (len(VERDICTS) + 6))
    components = list(dict.fromkeys(r["component"] for r in records.values()))
    totals = [0] * (len(VERDICTS) + 5)
    for c in components:
        mine = {k: r for k, r in records.items() if r["component"] == c}
        killed = [k for k, r in mine.items() if r["status"] == "killed"]
        counts = [sum(verdicts.get(k, {}).get("verdict") == v for k in killed) for v in VERDICTS]
        unjudged = sum(verdicts.get(k, {}).get("verdict") not in VERDICTS for k in killed)
        survived = sum(r["status"] != "killed" for r in mine.values())
        full = sum(_full_marks(mine[k]) for k in killed)
        row = [len(mine), len(killed), *counts, unjudged, survived, full]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        rows.append(f"| {c} | " + " | ".join(map(str, row)) + " |")
    rows.append("| **all** | " + " | ".join(f"**{n}**" for n in totals) + " |")
    return rows


def _grade(r: dict) -> str:
    if r.get("score") is not None:
        return f"{r['score']:g}/{r['max_score']:g}"
    return str(r.get("grade", "not graded"))


def mistake_section(key: str, r: dict, verdict: dict) -> list[str]:
    lines = [f"#### `{key}` ({r['component']}): {r['status']}, grade {_grade(r)}", "", r.get("description", ""), ""]
    failure = r.get("first_failure")
    if failure:
        shown = failure["message"].splitlines()
        more = f" (+{len(shown) - SHOWN_LINES} lines)" if len(shown) > SHOWN_LINES else ""
        lines += [f"first failure: `{failure['test']}`{more}", "", "```", *shown[:SHOWN_LINES], "```", ""]
    if verdict:
        lines += [f"**verdict: {verdict.get('verdict')}**: {verdict.get('note', '')}", ""]
    return lines


def summary(results: dict, verdicts: dict) -> str:
    meta, records = results.get("__meta__", {}), _records(results)
    refs = {k: v["status"] for k, v in results.items() if k.startswith("reference/")}
    out = ["# Held-out mistake bank: results", ""]
    out += [
        f"Repository `{meta.get('repo')}` at commit `{meta.get('commit')}` (code id `{meta.get('code')}`: package, tests and fixtures); graded: {meta.get('grade')}.",
        "",
    ]
    bad_refs = [k for k, s in refs.items() if s != "survived"]
    out += [
        f"Reference passes every selected public suite: {'yes' if not bad_refs else 'NO: ' + ', '.join(bad_refs)}.",
        "",
    ]
    out += ["## Per component", "", *component_table(records, verdicts), ""]
    survivors = [k for k, r in records.items() if r["status"] != "killed"]
    out += ["## Survive the public suite", ""]
    out += [
        f"- `{k}` ({records[k]['component']}, grade {_grade(records[k])}): {records[k].get('description', '')}"
        for k in survivors
    ]
    full = [k for k, r in records.items() if r["status"] == "killed" and _full_marks(r)]
    graded = sum(r.get("score") is not None for r in records.values())
    out += ["", "## Fail the public suite but keep full marks in the grade", "", f"({graded} mistakes graded)", ""]
    out += [f"- `{k}` ({records[k]['component']}): {records[k].get('description', '')}" for k in full] or ["(none)"]
    wrong = [k for k in records if verdicts.get(k, {}).get("verdict") == "wrong"]
    out += ["", "## First message names a wrong mistake", ""]
    out += [f"- `{k}`: {verdicts[k].get('note', '')}" for k in wrong] or ["(none)"]
    out += ["", "## Every mistake", ""]
    for k, r in records.items():
        out += mistake_section(k, r, verdicts.get(k, {}))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("--judgements", default=None)
    parser.add_argument("--out", default=None, help="default: RESULTS with .md")
    args = parser.parse_args(argv)
    results = json.loads(Path(args.results).read_text())
    verdicts = tomllib.loads(Path(args.judgements).read_text()) if args.judgements else {}
    out = Path(args.out) if args.out else Path(args.results).with_suffix(".md")
    out.write_text(summary(results, verdicts))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
