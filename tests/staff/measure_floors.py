"""Measure every floor the tests' tolerances come from, and print it beside the declared one.

Graded cases (cs336_basics/staff/cases/): per case, the larger max scaled error, against the
float64 expected output, of the reference adapter and of the same adapter on PyTorch's built-in
kernels (tests/oracles.py), both run in the case's dtype, on the stored inputs and, for a public
case, on fresh.DRAWS more draws of its definition (the grader grades public cases on fresh
draws). The registry declares these floors, rounded up; its tolerances follow from them.

Ungraded comparisons (tests/floors.py): each test module in MEASURED_BY measures its own
comparisons over its seeds (`measure_floors()`), once with the reference and once with each
accepted variant of its component (in its area module, cs336_basics/staff/cases/<area>.py: every
exact way of writing the formula the catalogue knows); FLOORS declares the largest, rounded up.

Declared floors cover the largest of these over a matrix of the CPU code paths this machine can
reach (`--matrix`): PyTorch's vector kernels (ATEN_CPU_CAPABILITY), MKL's code branches
(MKL_CBWR), oneDNN (ONEDNN_MAX_CPU_ISA, or off: bfloat16 matrix products, GELU) and one or
two threads, each a process of its own. The staff invariants (test_floors.py, the drift check)
accept a measurement up to HEADROOM x the declared floor: CPUs outside the matrix (ARM, other
vendors) may round differently again (tests/README.md says how HEADROOM was chosen).

    uv run python -m tests.staff.measure_floors [--graded | --ungraded]     # this process's path
    uv run python -m tests.staff.measure_floors --matrix --record [--save m.json]  # every path
    uv run python -m tests.staff.measure_floors --load m.json [m2.json]            # that matrix again

--record writes the matrix maxima to floor_matrix.json (test_floors.py checks the declared floors
against it). After a change to some test modules, `--ungraded --modules M... --matrix --save
new.json` re-measures theirs alone and `--load old.json new.json --record` merges them; without
the old matrix's file, `--load new.json --record --merge` replaces or adds in floor_matrix.json
only the comparisons new.json measured (merged_record). The matrix takes about 20 minutes on a
quiet 2-core machine, an hour while other work shares it.
"""

import argparse
import contextlib
import importlib
import json
import math
from pathlib import Path

import torch

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import CASES, EXACT, HEADROOM, VARIANTS
from cs336_basics.staff.grader import fresh
from cs336_basics.testing import UNIT_ROUNDOFF, scaled_error
from tests import adapters
from tests.floors import FLOORS
from tests.oracles import builtin_kernels
from tests.staff import code_paths

# The matrix maxima the declared floors cover (`--matrix --record`; tests/staff/test_floors.py reads it).
RECORD = Path(__file__).with_name("floor_matrix.json")


def _measuring_modules() -> tuple[str, ...]:
    """Every test module that defines measure_floors(), found by reading tests/: a new one joins
    without a list to extend."""
    tests = Path(__file__).resolve().parents[1]
    found = [p for p in sorted(tests.rglob("test_*.py")) if "\ndef measure_floors(" in p.read_text()]
    return tuple(".".join(p.relative_to(tests.parent).with_suffix("").parts) for p in found)


# The modules whose measure_floors() measure the entries of tests/floors.py.
MEASURED_BY = _measuring_modules()


def max_error(adapter: str, fx) -> float:
    with torch.no_grad():
        return float(scaled_error(getattr(adapters, adapter)(**fx.kwargs), fx.expected).max())


def measure_graded(cases=CASES, draws: range = range(0)) -> dict[str, tuple[float, float]]:
    """{case name: (the reference's max scaled error, the built-in's)} over the stored inputs and,
    for a public inexact case, the inputs the seeds `draws` draw from its definition (the grader's
    fresh draws: their floor is what grader/fresh.py keeps a draw within)."""
    measured = {}
    for case in cases:
        stored = load_fixture(case.name, case.directory)
        drawn = not case.hidden and case.floor is not EXACT  # an exact case is exact on every draw
        fixtures = [stored] + ([fresh.drawn_fixture(stored, seed) for seed in draws] if drawn else [])
        ours = max(max_error(fx.adapter, fx) for fx in fixtures)
        with builtin_kernels():
            builtin = max(max_error(fx.adapter, fx) for fx in fixtures)
        measured[case.name] = ours, builtin
    return measured


def graded_floor(ours: float, builtin: float) -> float:
    return max(ours, builtin if builtin != float("inf") else 0.0)  # inf: the built-in defines it otherwise


def graded(components=COMPONENTS) -> None:
    print(f"{'case':32s} {'dtype':9s} {'ours':>9s} {'built-in':>9s} {'floor':>9s} {'declared':>9s}")
    cases = [c for c in CASES if c.component in components]
    measured = measure_graded(cases, draws=fresh.DRAWS)
    for case in cases:
        ours, builtin = measured[case.name]
        dtype = str(case.dtype).removeprefix("torch.")
        declared = "exact" if case.floor is None else f"{case.floor:.2e}"
        print(
            f"{case.name:32s} {dtype:9s} {ours:9.2e} {builtin:9.2e} {graded_floor(ours, builtin):9.2e} {declared:>9s}"
        )


def forms_of(module_name: str) -> list:
    """The reference (a null context) and, for a public test module (a student's code meets it),
    the accepted variants of the components it compares: the one it is named after
    (tests.test_<component>) and every kernel of its KERNELS table. A staff module (tests.staff.*)
    checks the reference alone."""
    if module_name.startswith("tests.staff."):
        return [contextlib.nullcontext()]
    module = importlib.import_module(module_name)
    components = {module_name.rsplit(".", 1)[-1].removeprefix("test_"), *getattr(module, "KERNELS", ())}
    return [contextlib.nullcontext()] + [v.applied() for v in VARIANTS if v.component in components]


def measure_ungraded(seeds: range | None = None, modules: tuple[str, ...] = MEASURED_BY) -> dict[str, float]:
    """{FLOORS name: measured floor}, the largest over the reference and the accepted variants,
    from every module in `modules` (over its own seeds, or `seeds`)."""
    measured: dict[str, float] = {}
    for name in modules:
        measure = importlib.import_module(name).measure_floors
        for form in forms_of(name):
            with form:
                got = measure() if seeds is None else measure(seeds)
            measured |= {k: max(v, measured.get(k, 0.0)) for k, v in got.items()}
    return measured


def round_up(x: float, digits: int = 2) -> float:
    """x rounded up to `digits` significant digits (4.31e-16 -> 4.4e-16): how floors are declared."""
    if x <= 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(round(x / step, 9)) * step


def ungraded(modules: tuple[str, ...] = MEASURED_BY) -> None:
    measured = measure_ungraded(modules=modules)
    print(f"{'comparison':32s} {'dtype':9s} {'measured':>11s} {'rounded up':>10s} {'declared':>9s}  note")
    for name, floor in FLOORS.items():
        got = measured.get(name)
        dtype = str(floor.dtype).removeprefix("torch.")
        note = "not measured" if got is None else ("ABOVE THE DECLARED FLOOR" if got > floor.value else "")
        shown = ("-", "-") if got is None else (f"{got:.4e}", f"{round_up(got):.1e}")
        print(f"{name:32s} {dtype:9s} {shown[0]:>11s} {shown[1]:>10s} {floor.value:9.2e}  {note}")


def measure(
    graded: bool = True, ungraded: bool = True, modules: tuple[str, ...] = MEASURED_BY, components=COMPONENTS
) -> dict:
    """This process's measurements: {"graded": {case: [ours, built-in]} of the components' cases,
    "ungraded": {FLOORS name: floor}}."""
    cases = [c for c in CASES if c.component in components]
    return {
        "graded": {k: list(v) for k, v in measure_graded(cases, draws=fresh.DRAWS).items()} if graded else {},
        "ungraded": measure_ungraded(modules=modules) if ungraded else {},
    }


def measure_matrix(paths: list[code_paths.CodePath], which: list[str]) -> dict[str, dict]:
    """{path label: measure()} for every code path, each measured in a process of its own."""
    out = {}
    for i, path in enumerate(paths, start=1):
        print(f"[{i}/{len(paths)}] {path.label}", flush=True)
        out[path.label] = code_paths.run_json(path, "tests.staff.measure_floors", which)
    return out


def declared() -> dict[str, dict[str, float]]:
    """{"graded": {case: declared floor}, "ungraded": {FLOORS name: declared floor}} (exact cases: 0)."""
    return {
        "graded": {c.name: c.floor or 0.0 for c in CASES},
        "ungraded": {name: f.value for name, f in FLOORS.items()},
    }


def cells(matrix: dict[str, dict], kind: str) -> dict[str, dict[str, float]]:
    """{comparison: {path label: measured floor}} of one kind ("graded" or "ungraded")."""
    out: dict[str, dict[str, float]] = {}
    for label, measured in matrix.items():
        for name, value in measured[kind].items():
            out.setdefault(name, {})[label] = graded_floor(*value) if kind == "graded" else value
    return out


def roundoffs() -> dict[str, dict[str, float]]:
    """{kind: {comparison: the unit roundoff of its dtype}}: the least floor the tolerance rule takes."""
    return {
        "graded": {c.name: UNIT_ROUNDOFF[c.dtype] for c in CASES},
        "ungraded": {name: UNIT_ROUNDOFF[f.dtype] for name, f in FLOORS.items()},
    }


def surprise(by_path: dict[str, float], u: float) -> tuple[float, str]:
    """The largest factor by which one switch value (a capability, an MKL branch, a oneDNN setting,
    a thread count) raised a measurement over the same path with that switch set otherwise, each
    measurement taken at least u (the tolerance rule's least floor): how far a code path the matrix
    does not hold may be from those it does. (the factor, "switch=value")."""
    worst, parts = (1.0, ""), {label: label.split("/") for label in by_path}
    for label, p in parts.items():
        for i, switch in enumerate(("capability", "MKL", "oneDNN", "threads")):
            rest = p[:i] + p[i + 1 :]
            others = [max(by_path[k], u) for k, q in parts.items() if q[i] != p[i] and q[:i] + q[i + 1 :] == rest]
            if others:
                worst = max(worst, (max(by_path[label], u) / max(others), f"{switch}={p[i]}"))
    return worst


def print_paths(matrix: dict[str, dict]) -> None:
    """Per code path and kind: how many comparisons measure above the declared floor, and the worst ratio."""
    floors = declared()
    print(f"\n{'code path (capability/MKL/oneDNN/threads)':44s} {'graded above':>12s} {'worst':>6s}  "
          f"{'ungraded above':>14s} {'worst':>6s}")  # fmt: skip
    for label, measured in matrix.items():
        row = []
        for kind in ("graded", "ungraded"):
            got = cells({label: measured}, kind)
            ratios = [
                v[label] / floors[kind][n] if floors[kind][n] else (v[label] > 0) * math.inf for n, v in got.items()
            ]
            row.append((sum(r > 1 for r in ratios), max(ratios, default=0.0)))
        print(f"{label:44s} {row[0][0]:12d} {row[0][1]:6.2f}  {row[1][0]:14d} {row[1][1]:6.2f}")


def print_maxima(matrix: dict[str, dict], kind: str) -> tuple[float, str]:
    """Per comparison: the matrix maximum, where it was measured, the declared floor and the largest
    surprise (one switch over the same path with it set otherwise); the largest surprise of all."""
    floors, u, widest = declared()[kind], roundoffs()[kind], (1.0, "")
    print(f"\n{kind:32s} {'matrix max':>10s} {'rounded up':>10s} {'declared':>9s} {'max/decl':>8s} {'surprise':>8s}"
          f"  at")  # fmt: skip
    for name, by_path in cells(matrix, kind).items():
        at = max(by_path, key=by_path.get)
        top, floor = by_path[at], floors[name]
        ratio = top / floor if floor else (math.inf if top > 0 else 0.0)
        note = "  ABOVE THE DECLARED FLOOR" if ratio > 1 else ""
        factor, switch = surprise(by_path, u[name])
        widest = max(widest, (factor, f"{name}, {switch}"))
        print(f"{name:32s} {top:10.3e} {round_up(top):10.1e} {floor:9.2e} {ratio:8.2f} {factor:8.2f}"
              f"  {at}{note}")  # fmt: skip
    print(f"largest surprise: {widest[0]:.2f}x ({widest[1]}); HEADROOM = {HEADROOM:g}")
    return widest


def print_matrix(matrix: dict[str, dict]) -> None:
    print_paths(matrix)
    for kind in ("graded", "ungraded"):
        if any(m[kind] for m in matrix.values()):
            print_maxima(matrix, kind)


def maxima(matrix: dict[str, dict]) -> dict[str, dict[str, list]]:
    """{kind: {comparison: [matrix maximum, the code path it was measured on, surprise, its switch]}}."""
    out = {}
    for kind in ("graded", "ungraded"):
        u = roundoffs()[kind]
        out[kind] = {name: [max(v.values()), max(v, key=v.get), *surprise(v, u[name])]
                     for name, v in cells(matrix, kind).items()}  # fmt: skip
    return out


def loaded(files: list[Path]) -> dict[str, dict]:
    """The matrix of --save files, each comparison of each path from the last file that measured it."""
    matrix: dict[str, dict] = {}
    for f in files:
        for label, measured in json.loads(f.read_text()).items():
            cell = matrix.setdefault(label, {"graded": {}, "ungraded": {}})
            for kind, values in measured.items():
                cell[kind] |= values
    return matrix


def machine() -> dict[str, str]:
    """The CPU and the PyTorch version measurements are taken with, as RECORD names them."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")  # fmt: skip
    return {"cpu": cpu, "torch": torch.__version__}


def record(matrix: dict[str, dict], path: Path = RECORD) -> None:
    """Write the matrix maxima to RECORD, with the machine and the code paths they come from."""
    path.write_text(json.dumps({**machine(), "paths": list(matrix), **maxima(matrix)}, indent=1) + "\n")


def merged_record(recorded: dict, matrix: dict[str, dict], here: dict[str, str]) -> dict:
    """RECORD's content `recorded` with the comparisons a partial matrix measured replaced or added
    (their maxima, where and surprises recomputed from it), every other entry kept. Sound only if
    the partial matrix is a matrix of the same code paths on the same machine and PyTorch (`here`,
    as machine() gives it), each comparison measured on every path: otherwise ValueError."""
    if {k: recorded[k] for k in here} != here:
        raise ValueError(f"recorded on {[recorded[k] for k in here]}, measured on {list(here.values())}")
    if sorted(matrix) != sorted(recorded["paths"]):
        raise ValueError(f"the partial matrix's paths {sorted(matrix)} are not the record's")
    for kind in ("graded", "ungraded"):
        if len({tuple(sorted(m[kind])) for m in matrix.values()}) > 1:
            raise ValueError(f"{kind}: the paths measured different comparisons (a path's run failed?)")
    new = maxima(matrix)
    return recorded | {kind: recorded[kind] | new[kind] for kind in ("graded", "ungraded")}


LOAD_HELP = "print what --save wrote; of several files, each comparison from the last one that measured it"
MODULES_HELP = "with --ungraded: only these of MEASURED_BY (a partial re-measure, merged by --load or --merge)"
COMPONENTS_HELP = "with --graded: only these components' cases (a partial re-measure, merged by --load or --merge)"
MERGE_HELP = f"with --record: replace or add in {RECORD.name} only the comparisons measured, keep the rest"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--graded", action="store_true", help="only the registry's cases")
    which.add_argument("--ungraded", action="store_true", help="only tests/floors.py's comparisons")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--matrix", action="store_true", help="every code path of tests/staff/code_paths.py")
    mode.add_argument("--load", type=Path, nargs="+", metavar="FILE", help=LOAD_HELP)
    mode.add_argument("--json", type=Path, metavar="FILE", help="write this process's measurements (a matrix cell)")
    parser.add_argument("--save", type=Path, metavar="FILE", help="with --matrix: keep every cell in FILE")
    parser.add_argument("--record", action="store_true", help=f"with --matrix or --load: write {RECORD.name}")
    parser.add_argument("--merge", action="store_true", help=MERGE_HELP)
    parser.add_argument("--modules", nargs="+", choices=MEASURED_BY, metavar="MODULE", help=MODULES_HELP)
    parser.add_argument("--components", nargs="+", choices=COMPONENTS, metavar="COMPONENT", help=COMPONENTS_HELP)
    args = parser.parse_args()
    if args.modules and not args.ungraded or args.components and not args.graded:
        parser.error("--modules needs --ungraded, --components --graded")
    if args.merge and not args.record:
        parser.error("--merge needs --record")
    code_paths.mkldnn_switch()
    modules, components = tuple(args.modules or MEASURED_BY), tuple(args.components or COMPONENTS)
    kinds = ["--graded", "--components", *components] if args.graded else []
    kinds += ["--ungraded", "--modules", *modules] if args.ungraded else []
    if args.json:
        args.json.write_text(json.dumps(measure(not args.ungraded, not args.graded, modules, components)))
    elif args.matrix or args.load:
        matrix = loaded(args.load) if args.load else measure_matrix(code_paths.matrix(), kinds)
        if args.save:
            args.save.write_text(json.dumps(matrix, indent=1))
        if args.record and args.merge:
            try:
                merged = merged_record(json.loads(RECORD.read_text()), matrix, machine())
            except ValueError as e:
                parser.error(f"--merge: {e}")
            RECORD.write_text(json.dumps(merged, indent=1) + "\n")
        elif args.record:
            if not all(m["graded"] and m["ungraded"] for m in matrix.values()):
                parser.error("--record needs both kinds measured on every path (or --merge)")
            record(matrix)
        print_matrix(matrix)
    else:
        if not args.ungraded:
            graded(components)
        if not args.graded:
            ungraded(modules)


if __name__ == "__main__":
    main()
