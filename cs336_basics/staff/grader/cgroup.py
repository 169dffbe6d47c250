"""A control group per worker: it bounds the memory of the worker and every process it starts
(anonymous memory, and the pages of memfd files and tmpfs files it writes: its home, /tmp,
/dev/shm; RLIMIT_AS bounds neither), the number of its processes and threads, and its CPU time
per second. The grader creates the group (`create`), the worker moves itself in as root before
any student code runs (`join`), and the grader reads the peak and the OOM kills afterwards
(`usage`) and removes the group once every process in it is killed (`remove`).

cgroup v2 when the unified hierarchy has the memory, pids and cpu controllers (memory.max,
memory.swap.max, pids.max, cpu.max; socket buffers are part of memory.max); v1 otherwise, one
group per controller hierarchy (memory.limit_in_bytes and memory.memsw.limit_in_bytes,
memory.kmem.tcp.limit_in_bytes: v1 does not count TCP buffers in limit_in_bytes, pids.max,
cpu.cfs_quota_us / cpu.cfs_period_us, and cpuacct's group when it is mounted apart from cpu).
The CPU time the group's processes used (`cpu_seconds`: v2 cpu.stat usage_usec, v1
cpuacct.usage) is what the grader's time limits count. Groups are made under the grader's own
group in each hierarchy (/proc/self/cgroup), named cs336-worker-<grader pid>-<n>. See the kernel's
Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/{memory,pids,cpuacct}.rst and
scheduler/sched-bwc.rst.
"""

import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass

CONTROLLERS = ("memory", "pids", "cpu")
OPTIONAL_V1 = ("cpuacct",)  # CPU time: co-mounted with cpu ("cpu,cpuacct") or a hierarchy of its own
MOUNTINFO, PROC_CGROUP = "/proc/self/mountinfo", "/proc/self/cgroup"  # a test points these at a fake tree
PERIOD_US = 100_000
_counter = itertools.count(1)
_lock = threading.Lock()


def sigkill(pids) -> None:
    """SIGKILL each of pids; one already gone (or not ours to kill) is passed over."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_until_gone(find, rounds: int, pause_s: float = 0.0) -> bool:
    """SIGKILL the processes find() lists, round after round (one may fork while the last is
    killed), until it lists none or `rounds` are done; whether none is left."""
    for _ in range(rounds):
        pids = find()
        if not pids:
            return True
        sigkill(pids)
        time.sleep(pause_s)
    return not find()


@dataclass(frozen=True)
class Cgroup:
    version: int  # 1 or 2
    dirs: tuple[str, ...]  # v2: one directory; v1: one per controller hierarchy (memory, pids, cpu[, cpuacct])

    def join(self, pid: int = 0) -> None:
        """Move pid (0: this process) into the group, in every hierarchy. OSError if refused."""
        for d in self.dirs:
            _write(d, "cgroup.procs", str(pid or os.getpid()))

    def pids(self) -> list[int]:
        found = set()
        for d in self.dirs:
            try:
                found |= {int(p) for p in _read(d, "cgroup.procs").split()}
            except OSError:
                pass
        return sorted(found)

    def usage(self) -> "Usage":
        """The group's memory peak and limit and its OOM kills, read by the grader."""
        d = self.dirs[0]
        try:
            if self.version == 2:
                events = dict(line.split() for line in _read(d, "memory.events").splitlines())
                peak = int(_read(d, "memory.peak")) if os.path.exists(f"{d}/memory.peak") else 0
                return Usage(
                    peak, int(_read(d, "memory.max")), int(events.get("oom_kill", 0)) + int(events.get("max", 0))
                )
            oom = dict(line.split() for line in _read(d, "memory.oom_control").splitlines())
            return Usage(
                int(_read(d, "memory.max_usage_in_bytes")),
                int(_read(d, "memory.limit_in_bytes")),
                int(oom.get("oom_kill", 0)) + int(_read(d, "memory.failcnt")),
            )
        except (OSError, ValueError):
            return Usage(0, 0, 0)

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) the group's processes have used, dead ones included; None if unreadable."""
        try:
            if self.version == 2:
                stat = dict(line.split() for line in _read(self.dirs[0], "cpu.stat").splitlines())
                return int(stat["usage_usec"]) / 1e6
            for d in self.dirs[2:]:
                if os.path.exists(f"{d}/cpuacct.usage"):
                    return int(_read(d, "cpuacct.usage")) / 1e9
        except (OSError, ValueError, KeyError):
            pass
        return None

    def kill_all(self, rounds: int = 200) -> bool:
        """SIGKILL every process in the group until it is empty; whether it is."""
        if self.version == 2 and os.path.exists(f"{self.dirs[0]}/cgroup.kill"):
            try:
                _write(self.dirs[0], "cgroup.kill", "1")
            except OSError:
                pass
        return kill_until_gone(self.pids, rounds, pause_s=0.005)

    def remove(self) -> bool:
        """Kill everything in the group and its nested groups (a grader graded inside one leaves
        its workers' groups there if it is killed) and remove them all; whether it is gone."""
        for d in self.dirs:
            for sub in _subgroups(d):
                Cgroup(1, (sub,)).remove()
        self.kill_all()
        gone = True
        for d in self.dirs:
            for _ in range(100):  # an exiting task leaves cgroup.procs a little after SIGKILL
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            gone = gone and not os.path.exists(d)
        return gone


@dataclass(frozen=True)
class Usage:
    peak_bytes: int  # the group's highest memory charge
    limit_bytes: int
    oom_events: int  # OOM kills and failed charges: > 0 means it ran out of memory

    @property
    def out_of_memory(self) -> bool:
        return self.oom_events > 0 or (self.limit_bytes > 0 and self.peak_bytes >= self.limit_bytes)


def _subgroups(d: str) -> list[str]:
    """The groups directly inside group directory d."""
    try:
        return [e.path for e in os.scandir(d) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _read(d: str, name: str) -> str:
    with open(f"{d}/{name}") as f:
        return f.read().strip()


def _write(d: str, name: str, value: str) -> None:
    with open(f"{d}/{name}", "w") as f:
        f.write(value)


def _own_groups() -> dict[str, str]:
    """{controller (or "" for the unified hierarchy): this process's group path}."""
    groups = {}
    with open(PROC_CGROUP) as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                groups[c] = path
    return groups


def _mounts() -> dict[str, str]:
    """{controller (or "" for cgroup2): mount point} from /proc/self/mountinfo."""
    found = {}
    with open(MOUNTINFO) as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            fstype, options, point = fields[sep + 1], fields[sep + 3], fields[4]
            if fstype == "cgroup2":
                found.setdefault("", point)
            elif fstype == "cgroup":
                for option in options.split(","):
                    if option in CONTROLLERS + OPTIONAL_V1:
                        found.setdefault(option, point)
    return found


def _v2_parent() -> str | None:
    """The grader's own v2 group, if the memory, pids and cpu controllers are (or can be) enabled for its children."""
    mount, path = _mounts().get(""), _own_groups().get("")
    if mount is None or path is None:
        return None
    parent = mount + path.rstrip("/")
    try:
        if not set(CONTROLLERS) <= set(_read(parent, "cgroup.controllers").split()):
            return None
        enabled = set(_read(parent, "cgroup.subtree_control").split())
        if not set(CONTROLLERS) <= enabled:
            _write(parent, "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
    except OSError:
        return None  # e.g. EBUSY: the grader's group holds processes and is not the root
    return parent


def _v1_parents() -> dict[str, str] | None:
    mounts, groups = _mounts(), _own_groups()
    if not all(c in mounts and c in groups for c in CONTROLLERS):
        return None
    parents = {c: mounts[c] + groups[c].rstrip("/") for c in CONTROLLERS}
    for c in OPTIONAL_V1:  # only a hierarchy of its own: co-mounted with cpu, the cpu group has its files
        if c in mounts and c in groups and mounts[c] not in {mounts[k] for k in CONTROLLERS}:
            parents[c] = mounts[c] + groups[c].rstrip("/")
    return parents


def create(memory_mb: int, tasks: int, cpus: float, socket_mb: int = 64) -> Cgroup:
    """A new empty group with these limits (root only; socket_mb: v1's TCP buffer limit). OSError
    (naming what failed) if the machine has no cgroup with the memory, pids and cpu controllers
    or refuses one."""
    name = f"cs336-worker-{os.getpid()}-{next(_counter)}"
    memory, quota = memory_mb * 2**20, max(1000, int(cpus * PERIOD_US))
    with _lock:  # two grading threads enabling v2 controllers at once
        parent = _v2_parent()
    if parent is not None:
        group = Cgroup(2, (f"{parent}/{name}",))
        os.mkdir(group.dirs[0])
        try:
            d = group.dirs[0]
            _write(d, "memory.max", str(memory))
            if os.path.exists(f"{d}/memory.swap.max"):
                _write(d, "memory.swap.max", "0")
            _write(d, "pids.max", str(tasks))
            _write(d, "cpu.max", f"{quota} {PERIOD_US}")
        except OSError:
            group.remove()
            raise
        return group
    parents = _v1_parents()
    if parents is None:
        raise OSError("no cgroup hierarchy with the memory, pids and cpu controllers (neither v2 nor v1)")
    group = Cgroup(1, tuple(f"{parents[c]}/{name}" for c in CONTROLLERS + OPTIONAL_V1 if c in parents))
    made = []
    try:
        for d in group.dirs:
            os.mkdir(d)
            made.append(d)
        mem, pids, cpu = group.dirs[:3]
        _write(mem, "memory.limit_in_bytes", str(memory))
        if os.path.exists(f"{mem}/memory.memsw.limit_in_bytes"):  # no escape into swap
            _write(mem, "memory.memsw.limit_in_bytes", str(memory))
        if os.path.exists(f"{mem}/memory.kmem.tcp.limit_in_bytes"):  # TCP buffers: not in limit_in_bytes
            _write(mem, "memory.kmem.tcp.limit_in_bytes", str(min(memory, socket_mb * 2**20)))
        _write(pids, "pids.max", str(tasks))
        _write(cpu, "cpu.cfs_period_us", str(PERIOD_US))
        _write(cpu, "cpu.cfs_quota_us", str(min(quota, _v1_quota_cap(os.path.dirname(cpu)))))
    except OSError:
        for d in reversed(made):
            os.rmdir(d)
        raise
    return group


def _v1_quota_cap(parent: str) -> int:
    """The largest cpu.cfs_quota_us (per PERIOD_US) a v1 child of `parent` may have: the kernel
    refuses (EINVAL) a quota above an ancestor's, as when the grader itself runs in a group of
    half a CPU."""
    cap, d = 2**62, parent
    mount = _mounts().get("cpu", "/")
    while True:
        try:
            quota, period = int(_read(d, "cpu.cfs_quota_us")), int(_read(d, "cpu.cfs_period_us"))
            if quota > 0:
                cap = min(cap, quota * PERIOD_US // period)
        except (OSError, ValueError):
            pass
        if os.path.normpath(d) == os.path.normpath(mount) or d in ("/", ""):
            return cap
        d = os.path.dirname(d)


def remove_stale() -> list[str]:
    """Remove the groups of graders that are gone (killed before they removed them), killing
    what is left in them. Returns their directories."""
    parents = []
    try:
        parent = _v2_parent()
        parents = [parent] if parent else list((_v1_parents() or {}).values())
    except OSError:
        return []
    stale = []
    for parent in parents:
        for name in os.listdir(parent):
            pid = name.removeprefix("cs336-worker-").split("-")[0]
            if name.startswith("cs336-worker-") and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                group = Cgroup(1, (f"{parent}/{name}",))  # kill what is listed, then rmdir: v1 and v2 alike
                group.remove()
                stale.append(group.dirs[0])
    return stale


def _own_memory_dirs() -> list[str]:
    """The grader's own memory cgroup and its ancestors up to the mount (v2: the unified one), innermost first."""
    mounts, groups = _mounts(), _own_groups()
    key = "memory" if "memory" in mounts and "memory" in groups else "" if "" in mounts and "" in groups else None
    if key is None:
        return []
    mount, parts = mounts[key], [p for p in groups[key].split("/") if p]
    return [mount + "".join(f"/{p}" for p in parts[:i]) for i in range(len(parts), -1, -1)]


def machine_memory() -> tuple[int | None, int]:
    """(the memory limit of the innermost of the grader's own cgroup and its ancestors that has
    one, or None; the anonymous and shared memory that group holds now, which the kernel cannot
    drop as it drops file cache), in bytes: a container's limit, as Gradescope's 768 MB."""
    for d in _own_memory_dirs():
        for limit_file, anon in (
            ("memory.max", ("anon", "shmem")),
            ("memory.limit_in_bytes", ("total_rss", "total_shmem")),
        ):
            try:
                limit = _read(d, limit_file)
            except OSError:
                continue
            if limit != "max" and int(limit) < 2**60:
                try:
                    stat = dict(line.split() for line in _read(d, "memory.stat").splitlines())
                    return int(limit), sum(int(stat.get(k, 0)) for k in anon)
                except (OSError, ValueError):
                    return int(limit), 0
    return None, 0


def oom_kills() -> int:
    """OOM kills so far of the machine (/proc/vmstat oom_kill) and of the grader's own memory
    cgroup and its ancestors (a container's limit): one more after a worker died by SIGKILL
    outside its own group's limit means the grader's container, not the worker, ran out."""
    total = 0
    try:
        with open("/proc/vmstat") as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("oom_kill "))
    except OSError:
        pass
    for d in _own_memory_dirs():
        for name in ("memory.events", "memory.oom_control"):
            try:
                total += int(dict(line.split() for line in _read(d, name).splitlines()).get("oom_kill", 0))
            except (OSError, ValueError):
                pass
    return total
