"""The grading config, read from cs336_basics/staff/grading.toml: points per component (in the
order the components run) and the limits a worker runs under."""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from cs336_basics import REPO

DEFAULT_CONFIG = REPO / "cs336_basics" / "staff" / "grading.toml"


@dataclass(frozen=True)
class Limits:
    cpu_per_component_s: int | float = 20  # CPU time of the worker and its processes for all of a component's cases
    cpu_s_for: tuple[tuple[str, int | float], ...] = ()  # (component, CPU s): components given another limit
    startup_s: int | float = 20  # CPU time to start a worker and import the submission
    wall_per_component_s: int | float = 120  # wall clock per component (and import): only for hangs
    total_s: int | float = 480  # wall clock for the whole grading, public and hidden: under Gradescope's timeout
    judge_s: int | float = 30  # the grader's own CPU time to check one pass's outputs (each is size-capped)
    memory_mb: int = 4500  # RLIMIT_AS of a worker (see grading.toml for the measurement)
    file_mb: int = 64  # RLIMIT_FSIZE: largest file a worker may write
    disk_mb: int = 64  # the worker's writable home: a tmpfs this large (root only)
    disk_inodes: int = 1024  # ... holding at most this many files and directories
    processes: int = 64  # RLIMIT_NPROC of the worker's user, and its cgroup's pids.max (root only)
    resident_mb: int = 1024  # the worker's cgroup memory, memfd and tmpfs pages included (root only)
    cpus: float = 1.0  # the worker's cgroup CPU quota, in CPUs (root only)
    socket_mb: int = (
        64  # TCP buffers of the worker's cgroup (v1 memory.kmem.tcp.limit_in_bytes; v2 counts them in resident_mb)
    )
    network_components: tuple[str, ...] = ("parallel",)  # workers that may open AF_INET sockets (gloo on loopback)

    def cpu_s(self, component: str) -> int | float:
        """The CPU seconds `component`'s cases may use together."""
        return dict(self.cpu_s_for).get(component, self.cpu_per_component_s)


@dataclass(frozen=True)
class GradingConfig:
    points: dict[str, int | float]  # component -> points, in running order
    limits: Limits = field(default_factory=Limits)
    # False runs workers without the sandbox (no user switch, no namespaces, no hidden paths).
    # Only for tests that show a cheat would work without it; the command line never sets it.
    isolate: bool = True
    # The components whose workers may start threads and processes (the tensor-parallel ranks),
    # each in a worker of its own; every other worker refuses both (seccomp.install_no_new_tasks).
    # Tests of the sandbox's process limits widen it for their samples; grading.toml cannot.
    starts_processes: frozenset[str] = frozenset({"parallel"})

    @property
    def components(self) -> list[str]:
        return list(self.points)

    @property
    def max_score(self) -> float:
        return float(sum(self.points.values()))


def load_config(path: Path = DEFAULT_CONFIG) -> GradingConfig:
    """Read a grading config; unknown keys and non-positive points raise ValueError."""
    data = tomllib.loads(Path(path).read_text())
    unknown = set(data) - {"points", "limits"}
    if unknown:
        raise ValueError(f"{path}: unknown sections {sorted(unknown)}; expected [points] and [limits]")
    points = data.get("points", {})
    if not points:
        raise ValueError(f"{path}: [points] must list at least one component")
    for name, value in points.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{path}: points.{name} must be a positive number, got {value!r}")
    limits = data.get("limits", {})
    known = set(Limits.__dataclass_fields__)
    if set(limits) - known:
        raise ValueError(f"{path}: unknown limits {sorted(set(limits) - known)}; known: {sorted(known)}")
    if "network_components" in limits:
        limits["network_components"] = tuple(limits["network_components"])
    if "cpu_s_for" in limits:
        limits["cpu_s_for"] = tuple(sorted(limits["cpu_s_for"].items()))
    return GradingConfig(points=dict(points), limits=Limits(**limits))
