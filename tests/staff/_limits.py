"""The grader's limits in the staff tests: grading.toml's, with a lower CPU limit per component so
that a sample whose code loops costs the suite little.

The components that start processes (GradingConfig.starts_processes: the tensor-parallel ranks)
keep their shipped limit: each of their cases starts a process group (per rank a fork, a
rendezvous and an exit), CPU time the reference spends case after case, so a lower limit would
fail the reference once a loaded machine inflates it. No sample loops in them.
"""

from dataclasses import replace

from cs336_basics.staff.grader.config import GradingConfig, Limits


def quick_limits(config: GradingConfig, cpu_s: float, own: tuple[tuple[str, float], ...] = (), **changes) -> Limits:
    """config's limits with `cpu_s` CPU seconds per component, `own` ((component, CPU s), ...)
    for those named, and the shipped limit for each component that starts processes."""
    shipped = tuple((c, config.limits.cpu_s(c)) for c in sorted(config.starts_processes))
    return replace(config.limits, cpu_per_component_s=cpu_s, cpu_s_for=tuple(own) + shipped, **changes)
