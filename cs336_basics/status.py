"""`cs336 status`: run the tests and print, per component, tests passed / total and the
largest error against its stored fixtures."""

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from cs336_basics import COMPONENTS, REPO


@dataclass
class ComponentStatus:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    max_scaled_err: float | None = None
    max_abs_err: float | None = None
    first_failure: str = ""

    @property
    def total(self) -> int:
        return self.passed + self.failed


def component_of(classname: str, name: str) -> str:
    """The component a test belongs to: the first component name in the test's name or its
    parameters (`test_bad_input_raises_clear_error[swiglu-d_ff_zero]` -> swiglu), longest names
    first; otherwise its test file, as a path (`tests.test_ffn_width` -> tests/test_ffn_width.py:
    the tests of a given part, not a component)."""
    for component in sorted(COMPONENTS, key=len, reverse=True):
        if component in name:
            return component
    return "/".join(classname.split(".")) + ".py" if classname else "?"


def parse_junit(path: Path) -> dict[str, ComponentStatus]:
    table: dict[str, ComponentStatus] = defaultdict(ComponentStatus)
    for case in ET.parse(path).getroot().iter("testcase"):
        row = table[component_of(case.get("classname", ""), case.get("name", ""))]
        if case.find("skipped") is not None:
            row.skipped += 1
            continue
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            row.passed += 1
        else:
            row.failed += 1
            if not row.first_failure:
                row.first_failure = f"{case.get('name', '')}: {(problem.get('message') or '').strip()}"
        properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
        if "fixture" not in properties:  # only snapshot tests measure an error against a fixture
            continue
        for name, value in properties.items():
            if name in ("max_scaled_err", "max_abs_err") and value not in (None, "nan"):
                current = getattr(row, name)
                setattr(row, name, max(float(value), current) if current is not None else float(value))
    return dict(table)


def run_tests(test_dir: Path, extra: list[str]) -> dict[str, ComponentStatus]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(test_dir),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            *extra,
        ]
        subprocess.run(cmd, cwd=test_dir.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not report.exists():
            raise SystemExit("pytest did not produce a report; run `uv run pytest` to see why")
        return parse_junit(report)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"


def format_table(table: dict[str, ComponentStatus]) -> str:
    """One row per component, then each failing component's first failure, whole."""
    components_first = [c for c in COMPONENTS if c in table] + sorted(set(table) - set(COMPONENTS))
    w = max([22, *map(len, components_first)])
    lines = [f"{'component or test file':<{w}} {'passed':>9}  {'max abs err':>11}  {'max scaled err':>14}  status"]
    for name in components_first:
        row = table[name]
        lines.append(
            f"{name:<{w}} {row.passed:>4}/{row.total:<4}  {_fmt(row.max_abs_err):>11}  "
            f"{_fmt(row.max_scaled_err):>14}  {'ok' if row.failed == 0 else 'FAIL'}"
        )
    passed = sum(r.passed for r in table.values())
    total = sum(r.total for r in table.values())
    lines.append(f"{'all':<{w}} {passed:>4}/{total:<4}")
    for name in components_first:
        if table[name].failed:
            lines += ["", f"{name}: first failure", *("    " + line for line in table[name].first_failure.splitlines())]
    return "\n".join(lines)


def run(args) -> int:
    table = run_tests(REPO / "tests", args.pytest_args)
    print(format_table(table))
    print(
        "\nerrors are against the stored fixtures; scaled error = |a-e| / (|e| + rms(e)). "
        "Details: uv run pytest -k <component>"
    )
    return 0 if all(r.failed == 0 for r in table.values()) else 1


def add_command(commands) -> None:
    p = commands.add_parser("status", help="per-component table: tests passed/total, max error against the fixtures")
    p.description = "Any further arguments go to pytest, e.g. `cs336 status -k swiglu`."
    p.set_defaults(run=run, pytest_args=[], passes_unknown_args_to="pytest_args")
