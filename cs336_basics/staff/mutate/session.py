"""Mutation testing of one component: its solution regions mutated one change at a time, each
mutant in a fresh scratch copy of the repository, judged by the component's public tests.

    mutate_component(config, component, progress) -> ComponentResult

The unmutated copy runs first, on every tests/test_*.py: it must pass, and it fixes the test files
the mutants run (those it ran tests from) and their CPU limit (config.cpu_factor times its CPU
time, at least config.min_cpu_s). The checkout itself is only read.
"""

import concurrent.futures
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cs336_basics import COMPONENTS, REPO
from cs336_basics.staff.handout import all_solution_regions
from cs336_basics.staff.mutate import record
from cs336_basics.staff.mutate.execute import Limits, Outcome, run_tests
from cs336_basics.staff.mutate.mutants import Mutant, mutants_of
from cs336_basics.staff.public_tests import make_copy, test_files

BASELINE_WALL_S = 1800.0


@dataclass(frozen=True)
class MutateConfig:
    """What `cs336 mutate` runs: which components, how many mutants at once, and how long each may take."""

    components: tuple[str, ...] = COMPONENTS
    jobs: int = 1
    repo: Path = REPO
    record_dir: Path = REPO / "tests" / "staff" / "mutants"
    workdir: Path | None = None  # where the scratch copies go (default: the temporary directory)
    cpu_factor: float = 4.0  # a mutant's CPU limit: this times the unmutated run's CPU seconds ...
    min_cpu_s: float = 10.0  # ... and at least this
    wall_factor: float = 10.0  # the wall ceiling (a run that sleeps or hangs): this times the CPU limit

    def __post_init__(self):
        unknown = [c for c in self.components if c not in COMPONENTS]
        if unknown:
            raise ValueError(f"components: expected names from cs336_basics.COMPONENTS, got {unknown}")
        if not isinstance(self.jobs, int) or self.jobs < 1:
            raise ValueError(f"jobs: expected an integer >= 1, got {self.jobs!r}")
        for name in ("cpu_factor", "min_cpu_s", "wall_factor"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: expected a positive number, got {getattr(self, name)!r}")


@dataclass
class ComponentResult:
    component: str
    mutants: list[Mutant]
    originals: dict[str, str]  # file -> unmutated text, for the diffs
    baseline: Outcome
    outcomes: dict[tuple, Outcome] = field(default_factory=dict)  # mutant key -> outcome
    wall_s: float = 0.0
    judgement: record.Judgement | None = None

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes.values())

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if self.outcomes[m.key].status == "survived"]


def component_mutants(repo: Path, component: str) -> tuple[list[Mutant], dict[str, str]]:
    """Every mutant of the component's solution regions, and the unmutated text of each file."""
    mutants, originals = [], {}
    for rel, regions in all_solution_regions(repo).items():
        mine = [r for r in regions if r.component == component]
        if mine:
            originals[rel] = (repo / rel).read_text()
            mutants += mutants_of(repo / rel, mine, rel)
    if not originals:
        raise ValueError(f"component: {component!r} has no solution region in {repo / 'cs336_basics'}")
    return mutants, originals


def _in_copy(
    config: MutateConfig, component: str, files: list[str], limits: Limits, m: Mutant | None
) -> tuple[Outcome, list[str]]:
    """The tests on a fresh copy (mutated by `m` unless None), and the test files they ran tests from."""
    with tempfile.TemporaryDirectory(prefix=f"mutate-{component}-", dir=config.workdir) as tmp:
        copy = Path(tmp)
        make_copy(config.repo, copy)
        if m is not None:
            (copy / m.file).write_text(m.text)
        outcome = run_tests(copy, config.repo, component, files, limits)
        return outcome, test_files(copy / "junit.xml", copy)


def _baseline(config: MutateConfig, component: str) -> tuple[Outcome, list[str]]:
    every = sorted(p.relative_to(config.repo).as_posix() for p in (config.repo / "tests").glob("test_*.py"))
    outcome, files = _in_copy(config, component, every, Limits(None, BASELINE_WALL_S), None)
    if outcome.status != "survived" or not files:
        raise RuntimeError(
            f"{component}: the unmutated public tests must pass and select tests, got {outcome.status} "
            f"(exit {outcome.exit_code}, {len(files)} test files):\n{outcome.output}"
        )
    return outcome, files


def mutate_component(config: MutateConfig, component: str, progress: Callable[[str], None] = print) -> ComponentResult:
    """Run every mutant of `component` and judge the survivors against its record."""
    start = time.monotonic()
    mutants, originals = component_mutants(config.repo, component)
    progress(f"{component}: {len(mutants)} mutants; running the unmutated tests")
    baseline, files = _baseline(config, component)
    cpu_s = max(config.min_cpu_s, config.cpu_factor * baseline.cpu_s)
    limits = Limits(cpu_s, config.wall_factor * cpu_s)
    progress(f"{component}: unmutated {baseline.cpu_s} CPU s on {len(files)} files; limit {cpu_s:.1f} CPU s each")
    result = ComponentResult(component, mutants, originals, baseline)
    lock = threading.Lock()

    def one(m: Mutant) -> None:
        outcome = _in_copy(config, component, files, limits, m)[0]
        with lock:
            result.outcomes[m.key] = outcome
            done = len(result.outcomes)
            progress(f"[{done}/{len(mutants)}] {m.file}:{m.line} {m.mutation}: {outcome.status} ({outcome.wall_s} s)")

    with concurrent.futures.ThreadPoolExecutor(config.jobs) as pool:
        for future in [pool.submit(one, m) for m in mutants]:
            future.result()
    result.wall_s = round(time.monotonic() - start, 1)
    entries = record.load(config.record_dir / f"{component}.toml")
    result.judgement = record.judge(mutants, result.survivors, entries)
    return result
