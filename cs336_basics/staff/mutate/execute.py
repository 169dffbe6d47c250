"""One run of a component's public tests in a scratch copy, under a CPU-time limit.

    run_tests(copy, repo, component, files, limits) -> Outcome

The command is `pytest -x -q -p no:cacheprovider -k <component> <files>` (stop at the first
failure) with the repository's Python, niced, one thread, the copy first on sys.path. The limit is
CPU time (RLIMIT_CPU, so a loaded machine does not turn a slow run into a timeout), with a wall
ceiling far above it for a run that sleeps or hangs; either one ends the run as "timeout".
"""

import os
import resource
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cs336_basics.staff.public_tests import quiet_env, repo_python

OUTPUT_TAIL = 3000  # characters of pytest's output kept for a report


@dataclass(frozen=True)
class Limits:
    """cpu_s per run (RLIMIT_CPU; None: none), wall_s the ceiling for a run that does not compute."""

    cpu_s: float | None
    wall_s: float


@dataclass(frozen=True)
class Outcome:
    status: str  # "survived" (the tests pass), "killed" (a test fails or pytest errors), "timeout"
    exit_code: int | None
    cpu_s: float
    wall_s: float
    output: str


def _limit_child(cpu_s: float | None):
    def setup():
        os.nice(10)
        if cpu_s is not None:
            seconds = max(1, int(cpu_s + 0.999))
            resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))

    return setup


def _wait(proc: subprocess.Popen, wall_s: float) -> tuple[int | None, float]:
    """The exit code (None if the wall ceiling killed the process group) and the child's CPU seconds."""
    deadline = time.monotonic() + wall_s
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = -signal.SIGKILL
    return None, usage.ru_utime + usage.ru_stime


def run_tests(copy: Path, repo: Path, component: str, files: list[str], limits: Limits) -> Outcome:
    """The component's public tests (`files`, relative to `copy`) on the package in `copy`."""
    junit = copy / "junit.xml"
    cmd = [repo_python(repo), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-k", component]
    cmd += [f"--junitxml={junit}", *files]
    log = copy / "pytest.log"
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=copy,
            env=quiet_env({"PYTHONPATH": str(copy)}),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_limit_child(limits.cpu_s),
            start_new_session=True,
        )
        code, cpu_s = _wait(proc, limits.wall_s)
    wall_s = time.monotonic() - start
    output = log.read_text(errors="replace")[-OUTPUT_TAIL:]
    if code is None or code in (-signal.SIGXCPU, -signal.SIGKILL):
        status = "timeout"
    else:
        status = "survived" if code == 0 else "killed"
    return Outcome(status, code, round(cpu_s, 2), round(wall_s, 2), output)
