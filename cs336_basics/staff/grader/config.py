"""The grading config: each component's points, from cs336_basics.POINTS (the grader's own copy
of the package: a submission's is never imported here), and the limits a worker runs under, read
from cs336_basics/staff/grading.toml. Components run in COMPONENTS order."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from cs336_basics import COMPONENTS, POINTS, REPO

DEFAULT_CONFIG = REPO / "cs336_basics" / "staff" / "grading.toml"


@dataclass(frozen=True)
class Limits:
    """What a worker may use. The values are written once, in grading.toml's [limits] (with the
    measurement behind each); a course's own config overrides some of them (load_config)."""

    cpu_per_component_s: int | float  # CPU time of the worker and its processes for all of a component's cases
    startup_s: int | float  # CPU time to start a worker and import the submission
    wall_per_component_s: int | float  # wall clock per component (and import): only for hangs
    total_s: int | float  # wall clock for the whole grading, public and hidden: under Gradescope's timeout
    judge_s: int | float  # the grader's own CPU time to check one pass's outputs (each is size-capped)
    memory_mb: int  # RLIMIT_AS of a worker
    file_mb: int  # RLIMIT_FSIZE: largest file a worker may write
    open_files: int  # RLIMIT_NOFILE: descriptors a worker's process may hold open
    disk_mb: int  # the worker's writable home: a tmpfs this large (root only)
    disk_inodes: int  # ... holding at most this many files and directories
    processes: int  # RLIMIT_NPROC of the worker's user, and its cgroup's pids.max (root only)
    resident_mb: int  # the worker's cgroup memory, memfd and tmpfs pages included (root only)
    cpus: float  # the worker's cgroup CPU quota, in CPUs (root only)
    socket_mb: int  # TCP buffers of the worker's cgroup (v1 memory.kmem.tcp.limit_in_bytes; v2: in resident_mb)
    network_components: tuple[str, ...]  # workers that may open AF_INET sockets (gloo on loopback)
    cpu_s_for: tuple[tuple[str, int | float], ...] = ()  # (component, CPU s): components given another limit

    def cpu_s(self, component: str) -> int | float:
        """The CPU seconds `component`'s cases may use together."""
        return dict(self.cpu_s_for).get(component, self.cpu_per_component_s)


@dataclass(frozen=True)
class GradingConfig:
    points: dict[str, int | float]  # component -> points: POINTS, or some of its entries (cs336 grade -k)
    limits: Limits
    # False runs workers without the sandbox (no user switch, no namespaces, no hidden paths).
    # Only for tests that show a cheat would work without it; the command line never sets it.
    isolate: bool = True
    # The components whose workers may start threads and processes (the tensor-parallel ranks),
    # each in a worker of its own; every other worker refuses both (seccomp.install_no_new_tasks).
    # Tests of the sandbox's process limits widen it for their samples; grading.toml cannot.
    starts_processes: frozenset[str] = frozenset({"parallel"})

    @property
    def components(self) -> list[str]:
        """The graded components, in COMPONENTS order (the running order)."""
        return [c for c in COMPONENTS if c in self.points]

    @property
    def max_score(self) -> float:
        return float(sum(self.points.values()))


def load_config(path: Path = DEFAULT_CONFIG) -> GradingConfig:
    """Every component with its points (POINTS) and the limits of a grading config; a section
    other than [limits] raises ValueError."""
    data = tomllib.loads(Path(path).read_text())
    unknown = set(data) - {"limits"}
    if unknown:
        raise ValueError(
            f"{path}: unknown sections {sorted(unknown)}; expected [limits] only "
            "(the points are cs336_basics.POINTS, in cs336_basics/__init__.py)"
        )
    return GradingConfig(points=dict(POINTS), limits=_limits(path, data.get("limits", {})))


def _limits(path: Path, given: dict) -> Limits:
    """Limits from a config's [limits] over grading.toml's: each value is written in one file."""
    known = set(Limits.__dataclass_fields__)
    if set(given) - known:
        raise ValueError(f"{path}: unknown limits {sorted(set(given) - known)}; known: {sorted(known)}")
    base = {} if Path(path) == DEFAULT_CONFIG else tomllib.loads(DEFAULT_CONFIG.read_text()).get("limits", {})
    limits = base | given
    missing = known - set(limits) - {"cpu_s_for"}
    if missing:
        raise ValueError(f"{path}: [limits] lacks {sorted(missing)} (grading.toml writes every limit)")
    if "network_components" in limits:
        limits["network_components"] = tuple(limits["network_components"])
    if "cpu_s_for" in limits:
        limits["cpu_s_for"] = tuple(sorted(limits["cpu_s_for"].items()))
    return Limits(**limits)
