"""The student's inner loop, timed: `uv run pytest -k <component>` in a fresh handout, as a ratio
to the floor of starting pytest at all.

    uv run python benchmarks/handout_loop.py [-n 5] [--strict] [--profile] [--handout DIR]

Builds the handout (`cs336 handout` into a temporary directory, or reuses --handout DIR),
restores the reference's solutions into it (so every test runs to the end, as in a finished
assignment), runs `uv sync --compile-bytecode` there (offline from uv's cache when it can),
and adds benchmark_floor/test_floor.py, a one-test file that only imports torch, outside the
handout's testpaths. Then, N times, interleaved (so a slow moment of a shared machine hits
every command alike), it times from the handout's folder:

    floor          uv run pytest benchmark_floor/test_floor.py
    floor + torch.optim   the same test building a torch.optim.SGD too (for information: outside
                   the tests' conftest that imports torch._dynamo, as stepping torch.optim's own
                   optimizers does anywhere)
    <component>    uv run pytest -k <component>        for every cs336_basics.COMPONENTS entry
    full suite     uv run pytest

after one warm-up run of each, and prints each command's median wall-clock and CPU (user +
system) seconds and their ratios to the floor's medians, with the targets: <= 1.25 per
component, <= 5 for the full suite. The verdict is on CPU time, which a busy shared machine
disturbs far less than wall-clock time. PYTHONDONTWRITEBYTECODE is unset for the commands, as on
a student's machine (pytest then caches its rewritten tests); --keep-env keeps it. It exits
non-zero only with --strict and a ratio over its target (or a failing test run). --profile then prints what
collection imports cost (`python -X importtime`, cumulative) and `pytest --durations` of the
two slowest components.
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cs336_basics import COMPONENTS
from cs336_basics.staff.handout import REPO, build_handout, restore_solutions

COMPONENT_TARGET = 1.25
FULL_TARGET = 5.0
FLOOR_TEST = '''"""The benchmark's floor: pytest in this project, importing torch and nothing of ours."""

import torch


def test_floor():
    assert torch.ones(2).sum().item() == 2
'''
FLOOR = ["uv", "run", "pytest", "benchmark_floor/test_floor.py"]
# Building any torch.optim.Optimizer imports torch._dynamo (add_param_group is wrapped in
# torch._disable_dynamo; the handout's conftest unwraps it, and stepping torch.optim.AdamW still
# imports it): a second floor, for information.
FLOOR_OPTIM_TEST = FLOOR_TEST.replace("assert", "torch.optim.SGD([torch.nn.Parameter(torch.ones(2))])\n    assert")
FLOOR_OPTIM = ["uv", "run", "pytest", "benchmark_floor/test_floor_optim.py"]
OPTIMIZER_COMPONENTS = ("adamw", "checkpoint")  # the selections that build a torch.optim.Optimizer


KEEP_ENV = False  # --keep-env: leave PYTHONDONTWRITEBYTECODE as this machine sets it


def _run(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)  # uv run must pick the handout's .venv, not this one's
    env.pop("PYTEST_ADDOPTS", None)
    if not KEEP_ENV:  # a student's machine caches bytecode (pytest's rewritten tests included)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run(cmd, cwd=cwd, env=env, **kw)


def _cpu_seconds() -> float:
    """User + system CPU seconds of every child process that has ended so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def prepare(handout: Path | None) -> tuple[Path, float]:
    """A handout with the solutions restored and its environment synced; (its folder, sync seconds)."""
    if handout is None:
        handout = Path(tempfile.mkdtemp(prefix="cs336-handout-loop-")) / "handout"
    if not (handout / "pyproject.toml").exists():
        t0 = time.perf_counter()
        build_handout(handout)
        restored = restore_solutions(handout, REPO)
        print(f"built {handout} and restored {len(restored)} solution regions in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    for flags in (["--offline"], []):
        done = _run(["uv", "sync", "--compile-bytecode", *flags], handout, capture_output=True, text=True)
        if done.returncode == 0:
            break
    else:
        raise SystemExit(f"`uv sync --compile-bytecode` failed in {handout}:\n{done.stderr}")
    sync_s = time.perf_counter() - t0
    (handout / "benchmark_floor").mkdir(exist_ok=True)
    (handout / "benchmark_floor" / "test_floor.py").write_text(FLOOR_TEST)
    (handout / "benchmark_floor" / "test_floor_optim.py").write_text(FLOOR_OPTIM_TEST)
    return handout, sync_s


def commands() -> dict[str, list[str]]:
    cmds = {"floor": FLOOR, "floor + torch.optim": FLOOR_OPTIM}
    cmds |= {c: ["uv", "run", "pytest", "-k", c] for c in COMPONENTS}
    cmds["full suite"] = ["uv", "run", "pytest"]
    return cmds


def measure(handout: Path, repetitions: int) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int]]:
    """Wall-clock and CPU (user + system, the command and its children) seconds of each command."""
    cmds = commands()
    times: dict[str, list[float]] = {name: [] for name in cmds}
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    codes: dict[str, int] = {}
    for cmd in cmds.values():  # a warm-up run each: bytecode caches, pytest's rewritten tests
        _run(cmd, handout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for rep in range(repetitions):
        for name, cmd in cmds.items():
            t0, c0 = time.perf_counter(), _cpu_seconds()
            done = _run(cmd, handout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu_seconds() - c0)
            codes[name] = max(codes.get(name, 0), done.returncode)
        print(
            f"repetition {rep + 1}/{repetitions}: " + ", ".join(f"{n} {t[-1]:.1f}" for n, t in times.items()),
            flush=True,
        )
    return times, cpu, codes


def table(times: dict[str, list[float]], cpu: dict[str, list[float]], codes: dict[str, int]) -> tuple[str, bool]:
    """Medians and ratios to the floor's, wall-clock and CPU. The verdict is on CPU time, which a
    busy shared machine disturbs far less than wall-clock time (both are printed)."""
    floor, floor_cpu = statistics.median(times["floor"]), statistics.median(cpu["floor"])
    ok = True
    lines = [f"{'command':<18} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6} {'target':>7}  verdict (cpu)"]
    for name, ts in times.items():
        med, med_cpu = statistics.median(ts), statistics.median(cpu[name])
        target = None if name.startswith("floor") else FULL_TARGET if name == "full suite" else COMPONENT_TARGET
        ratio = med_cpu / floor_cpu
        verdict = "" if target is None else "ok" if ratio <= target else "over"
        if codes[name] != 0:
            verdict += f" (pytest exit {codes[name]})"
        ok &= verdict == "" or verdict == "ok"
        target_s = "-" if target is None else f"<={target:g}"
        lines.append(
            f"{name:<18} {med:>7.2f} {med / floor:>6.2f} {med_cpu:>7.2f} {ratio:>6.2f} {target_s:>7}  {verdict}"
        )
    optim_cpu = statistics.median(cpu["floor + torch.optim"])
    lines.append("cpu ratio to `floor + torch.optim` (for information): " + ", ".join(
        f"{c} {statistics.median(cpu[c]) / optim_cpu:.2f}" for c in OPTIMIZER_COMPONENTS if c in cpu))  # fmt: skip
    return "\n".join(lines), ok


def profile(handout: Path, times: dict[str, list[float]], top: int = 15) -> None:
    """Collection's import costs and the slowest components' slowest tests."""
    done = _run(
        ["uv", "run", "python", "-X", "importtime", "-m", "pytest", "--collect-only", "-q", "-s"],
        handout,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), int(m.group(1)), len(m.group(3)) // 2, m.group(4)))
    print(
        f"\ncollection (`uv run python -X importtime -m pytest --collect-only -q -s`; -s, or pytest swallows the import log), top {top} imports by cumulative time:"
    )
    print(f"{'cumulative ms':>14} {'self ms':>8}  module (depth)")
    for cum, self_us, depth, name in sorted(rows, reverse=True)[:top]:
        print(f"{cum / 1e3:>14.0f} {self_us / 1e3:>8.0f}  {name} ({depth})")
    components = sorted(COMPONENTS, key=lambda c: -statistics.median(times[c]))[:2]
    for c in components:
        done = _run(["uv", "run", "pytest", "-k", c, "-q", "--durations=8"], handout, capture_output=True, text=True)
        block = done.stdout.split("slowest 8 durations")[-1].strip().splitlines()
        print(f"\n`uv run pytest -k {c} --durations=8`:\n" + "\n".join(block[1:10]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--repetitions", type=int, default=5)
    parser.add_argument("--handout", type=Path, help="reuse (or build into) this handout folder")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a ratio is over its target")
    parser.add_argument("--profile", action="store_true", help="also print import and test-duration profiles")
    parser.add_argument(
        "--keep-env",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE (by default it is unset, as on a student's machine)",
    )
    args = parser.parse_args(argv)
    global KEEP_ENV
    KEEP_ENV = args.keep_env
    handout, sync_s = prepare(args.handout)
    print(
        f"uv sync --compile-bytecode: {sync_s:.1f} s; PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')}; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}"
    )
    times, cpu, codes = measure(handout, args.repetitions)
    text, ok = table(times, cpu, codes)
    print(f"\n{args.repetitions} interleaved repetitions in {handout}; medians, ratio = median / floor median\n{text}")
    if args.profile:
        profile(handout, times)
    if args.handout is None:
        shutil.rmtree(handout.parent, ignore_errors=True)
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
