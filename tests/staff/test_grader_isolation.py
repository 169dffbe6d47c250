"""Staff only: the grader where graders grade (issue 16) and the second review's containment
(issue 15, items 2-5 and 7).

Hostile samples live in tests/staff/hostile/<name>/ (README.md: the attack, what happened before
the fix, what happens now); tests/staff/_hostile.py builds one from the reference. The grading tests count
CPU time, never wall time: their only clock is the grader's own budget, and a hang is indefinite.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from cs336_basics import REPO
from cs336_basics.staff.grader import autograder, cgroup, preflight, runner, sandbox
from cs336_basics.staff.grader.cases import graded_cases
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.grade import CaseResult, GradeReport, grade
from cs336_basics.staff.grader.report import to_gradescope
from cs336_basics.staff.handout import build_handout, restore_solutions
from tests.staff import container
from tests.staff._hostile import build, without_source_rule
from tests.staff._limits import quick_limits

pytestmark = pytest.mark.slow  # second tier: gradings in containers, cgroups and a fake Gradescope

CONFIG = load_config()
TEST_CONFIG = replace(CONFIG, limits=quick_limits(CONFIG, 8, startup_s=8))
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")


def hostile(tmp: Path, name: str) -> Path:
    """The reference (tmp/reference) with sample hostile/<name> applied, at tmp/name."""
    return build(name, tmp / "reference", tmp)


def marker(report, name: str) -> dict:
    """The JSON a sample put between NAME...NAME in its (public) failure message."""
    for r in report.results:
        if found := re.search(name + r"(\{.*?\})" + name, r.output):
            return json.loads(found.group(1))
    raise AssertionError(f"no {name} marker in {report.results[0].output[:500]!r}")


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    runner.start_forkserver()
    tmp = tmp_path_factory.mktemp("isolation")
    os.chmod(tmp, 0o755)  # the container test's workers, as other users, read the samples
    build_handout(tmp / "handout", lock=False)
    restore_solutions(shutil.copytree(tmp / "handout", tmp / "reference"), REPO, None)
    return tmp


@pytest.fixture
def scratch(tmp_path) -> Path:
    """An empty directory for the grader's temporary files, which the workers' users may enter."""
    d = Path(tempfile.mkdtemp(prefix="cs336-scratch-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------ points


def test_grader_max_scores_add_up_exactly_to_each_component_and_the_total():
    cases = graded_cases(CONFIG.components)
    count = {c: sum(k.component == c for k in cases) for c in CONFIG.points}
    results = [
        CaseResult(
            k,
            True,
            "passed",
            Fraction(CONFIG.points[k.component]) / count[k.component],
            Fraction(CONFIG.points[k.component]) / count[k.component],
        )
        for k in cases
    ]
    tests = to_gradescope(GradeReport("x", results, dict(CONFIG.points)))["tests"]
    for component, points in CONFIG.points.items():
        shares = [t["max_score"] for t, r in zip(tests, results, strict=False) if r.case.component == component]
        assert sum(shares) == points and sum(reversed(shares)) == points  # floats, in either order
        assert max(shares) - min(shares) <= 1 / 512  # shared equally, to the rounding
    assert sum(t["max_score"] for t in tests) == CONFIG.max_score
    assert sum(t["max_score"] for t in reversed(tests)) == CONFIG.max_score


# ------------------------------------------------------------------ cgroup v2, on a fake cgroupfs


def _fake_cgroup2(root: Path, monkeypatch) -> Path:
    """A cgroup2 tree as the kernel shows it, for a grader in group /grading."""
    mount = root / "fs" / "cgroup"
    (mount / "grading").mkdir(parents=True)
    (mount / "grading" / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (mount / "grading" / "cgroup.subtree_control").write_text("\n")
    (mount / "grading" / "memory.max").write_text("805306368\n")
    (mount / "grading" / "memory.stat").write_text("anon 314572800\nfile 209715200\nshmem 1048576\n")
    (mount / "grading" / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
    (root / "mountinfo").write_text(
        f"29 23 0:26 / {mount} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
    )
    (root / "cgroup").write_text("0::/grading\n")
    monkeypatch.setattr(cgroup, "MOUNTINFO", str(root / "mountinfo"))
    monkeypatch.setattr(cgroup, "PROC_CGROUP", str(root / "cgroup"))
    return mount


def test_grader_cgroup_v2_limits_usage_cpu_time_and_container_memory_on_a_fake_cgroupfs(tmp_path, monkeypatch):
    mount = _fake_cgroup2(tmp_path, monkeypatch)
    group = cgroup.create(512, 64, 0.5, socket_mb=32)
    d = Path(group.dirs[0])
    assert group.version == 2 and d.parent == mount / "grading"
    assert (mount / "grading" / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (d / "memory.max").read_text() == str(512 * 2**20)
    assert (d / "pids.max").read_text() == "64"
    assert (d / "cpu.max").read_text() == f"50000 {cgroup.PERIOD_US}"
    group.join(4242)
    assert (d / "cgroup.procs").read_text() == "4242"
    # what the kernel writes while the worker runs
    (d / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 10\n")
    (d / "memory.peak").write_text(str(100 * 2**20) + "\n")
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
    assert group.cpu_seconds() == 2.5
    usage = group.usage()
    assert usage.peak_bytes == 100 * 2**20 and usage.limit_bytes == 512 * 2**20 and not usage.out_of_memory
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n")
    assert group.usage().out_of_memory
    assert cgroup.machine_memory() == (805306368, 314572800 + 1048576)  # the container's limit, anon + shmem
    assert cgroup.oom_kills() >= 1  # the grader's own group's oom_kill


# ------------------------------------------------------------------ isolation levels


def test_grader_isolation_level_is_the_strongest_whose_mechanisms_all_work():
    assert preflight.level({}) == "full"
    assert preflight.level({"network namespace": "EPERM", "cgroup memory/pids/cpu": "EROFS"}) == "container"
    assert preflight.level({"user switch": "EPERM"}) == "none"
    assert preflight.level({m: "needs root" for m in preflight.MECHANISMS}) == "none"


@pytest.mark.skipif(os.geteuid() != 0, reason="the probe runs as root only")
def test_grader_isolation_probe_that_dies_before_it_reports_allows_no_level(monkeypatch):
    monkeypatch.setattr(json, "dumps", lambda *args, **kwargs: os._exit(1))  # the probe's child dies reporting
    failed = preflight.missing()
    assert set(failed) == set(preflight.MECHANISMS) and preflight.level(failed) == "none"


def test_grader_command_refuses_below_the_required_isolation_level(monkeypatch, capsys, tmp_path):
    from cs336_basics.staff.cli import main

    container_only = {m: "EPERM" for m in preflight.MECHANISMS if m not in ("user switch", "seccomp")}
    monkeypatch.setattr(preflight, "missing", lambda: dict(container_only))
    (tmp_path / "submission" / "cs336_basics").mkdir(parents=True)  # a folder the path check accepts
    argv = ["grade", str(tmp_path / "submission"), "--results", str(tmp_path / "r.json"), "--require-isolation", "full"]
    assert main(argv) == 2
    assert "below the required 'full'" in capsys.readouterr().err and not (tmp_path / "r.json").exists()


@ROOT_ONLY
def test_grader_states_the_isolation_level_to_staff_only(tmp):
    report = grade(tmp / "handout", TEST_CONFIG)
    results = to_gradescope(report)
    assert results["extra_data"]["isolation"]["level"] == preflight.probe()[0]
    assert any(n.startswith("isolation level ") for n in report.notes)
    visible = json.dumps([results["output"], [t["output"] for t in results["tests"]]])
    assert "isolation" not in visible and "seccomp" not in visible


# ------------------------------------------------------------------ without namespaces or a cgroup


def test_grader_counts_cpu_time_of_a_worker_without_a_cgroup():
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        while time.process_time() < 0.4:  # CPU time, however busy the machine (/proc counts 10 ms ticks)
            pass
        os.write(ready_w, b"x")
        time.sleep(60)
        os._exit(0)
    try:
        os.read(ready_r, 1)
        used = sandbox.cpu_seconds(pid, None)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert 0.3 <= used < 5


@ROOT_ONLY
def test_grader_removes_ipc_objects_and_shared_files_a_worker_user_left(tmp_path):
    uid = sandbox.pick_uid()
    pid = os.fork()
    if pid == 0:
        import ctypes

        try:
            os.setgid(uid)
            os.setuid(uid)
            libc = ctypes.CDLL(None, use_errno=True)
            ok = libc.shmget(0, 4096, 0o1600) >= 0 and libc.semget(0, 1, 0o1600) >= 0 and libc.msgget(0, 0o1600) >= 0
            with open(f"/dev/shm/cs336-left-{uid}", "w"):
                pass
            os.mkdir(f"/tmp/cs336-left-{uid}")
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert status == 0  # the control: without the seccomp filter a worker's user can leave them
    removed = sandbox.remove_user_leftovers(uid)
    assert {f"/dev/shm/cs336-left-{uid}", f"/tmp/cs336-left-{uid}"} <= set(removed)
    assert sum(r.startswith("System V") for r in removed) == 3
    assert not sandbox._sysv_objects(uid)
    assert not os.path.exists(f"/dev/shm/cs336-left-{uid}") and not os.path.exists(f"/tmp/cs336-left-{uid}")


# ------------------------------------------------------------------ TMPDIR (issue 15, item 7)


def test_grader_worker_forgets_the_temporary_directory_the_grader_cached(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    spec = sandbox.SandboxSpec(None, str(tmp_path), (), str(home), CONFIG.limits, isolate=False)
    pid = os.fork()
    if pid == 0:
        try:
            tempfile.tempdir = "/the/grader's/TMPDIR"  # cached by the forkserver before the worker existed
            sandbox.enter(spec, str(tmp_path / "log"), 10)  # closes every inherited descriptor
            (home / "seen").write_text(tempfile.gettempdir())
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert (home / "seen").read_text() == str(home)  # without a private /tmp: its own directory


# ------------------------------------------------------------------ hostile samples, full sandbox


@pytest.fixture(scope="module")
def graded_hostile(tmp):
    """{sample: GradeReport} for the IPC, TCP and log samples, and the most disk a file in the
    grader's temporary directory took meanwhile (allocated blocks, sampled every 10 ms: the
    get_batch cases' 12 MB token file is sparse, a few pages of it written)."""
    from concurrent.futures import ThreadPoolExecutor

    names = ("sysv_ipc_survives", "tcp_buffers", "floods_log")
    samples = {n: hostile(tmp, n) for n in names}
    scratch = Path(tempfile.mkdtemp(prefix="cs336-isolation-"))
    os.chmod(scratch, 0o755)
    largest, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            for here, _, files in os.walk(scratch):
                for f in files:
                    try:
                        largest[0] = max(largest[0], os.lstat(os.path.join(here, f)).st_blocks * 512)
                    except OSError:
                        pass
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    old, tempfile.tempdir = tempfile.tempdir, str(scratch)
    watcher.start()
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            with without_source_rule():  # the sandbox alone
                reports = dict(zip(names, pool.map(lambda n: grade(samples[n], TEST_CONFIG), names), strict=False))
    finally:
        done.set()
        watcher.join()
        tempfile.tempdir = old
        shutil.rmtree(scratch, ignore_errors=True)
    return reports, largest[0]


def _sysv_keys() -> set[int]:
    keys = set()
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}") as f:
            keys |= {int(line.split()[0]) for line in list(f)[1:]}
    return keys


@ROOT_ONLY
def test_grader_ipc_objects_of_a_worker_do_not_survive_the_grading(graded_hostile):
    report = graded_hostile[0]["sysv_ipc_survives"]
    assert report.score == CONFIG.max_score  # refused silently: the sample works on
    assert not _sysv_keys() & {0x0C533600, 0x0C533601, 0x0C533602}
    assert not os.path.exists("/dev/mqueue/cs336hostile")


@ROOT_ONLY
def test_grader_worker_has_no_tcp_socket_outside_the_network_components(graded_hostile):
    import errno

    seen = marker(graded_hostile[0]["tcp_buffers"], "TCPHELD")
    assert seen == {"mb": 0, "errno": errno.EAFNOSUPPORT}


@ROOT_ONLY
def test_grader_keeps_only_a_tail_of_worker_output_and_nothing_on_disk(graded_hostile):
    reports, largest = graded_hostile
    assert reports["floods_log"].score == CONFIG.max_score  # the worker was never stopped for its output
    assert any("printed 100 MB" in n for n in reports["floods_log"].notes)
    # inputs, outputs, the package's files, but no output: before, each worker's log reached
    # RLIMIT_FSIZE (64 MB) here
    assert largest < 8 * 2**20


@ROOT_ONLY
def test_grader_container_memory_limits_what_a_worker_may_hold():
    limit, held = cgroup.machine_memory()
    assert limit is None or held < limit


# ------------------------------------------------------------------ one budget; nothing left behind


def _leftovers(scratch: Path) -> dict:
    """Processes, mounts, System V objects and grading directories (in scratch, the grader's
    temporary directory) a grading could leave behind."""
    procs = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
        except (OSError, ValueError):
            continue
        if status.get("Name", "").strip() == "cs336hang" and not status.get("State", "").strip().startswith("Z"):
            procs.append(f"{pid} (parent {status['PPid'].strip()}, {status['State'].strip()})")
    mounts = [line.split()[4] for line in open("/proc/self/mountinfo") if line.split()[4].startswith(str(scratch))]
    # torch's own compile cache (torchinductor_<user>), which the grader's torch makes in the temp dir
    grading = [d for d in os.listdir(scratch) if not d.startswith("torchinductor_")]
    return {
        "processes": procs,
        "mounts": mounts,
        "sysv": sorted(_sysv_keys() & {0x0C533600, 0x0C533601, 0x0C533602}),
        "grading dirs": grading,
    }


@ROOT_ONLY
def test_grader_hanging_everywhere_ends_within_one_budget_and_leaves_nothing(tmp, scratch):
    sample = hostile(tmp, "hangs_everywhere")
    # 17 components hanging 5 s each need more than the budget: the public ones use it all
    config = replace(TEST_CONFIG, limits=replace(TEST_CONFIG.limits, wall_per_component_s=5, total_s=60))
    old, tempfile.tempdir = tempfile.tempdir, str(scratch)
    try:
        with without_source_rule():  # the sandbox alone
            report = grade(sample, config)
    finally:
        tempfile.tempdir = old
    results = to_gradescope(report)
    graded = [t for t in results["tests"] if t["max_score"] > 0]  # not the static check's 0-point review entry
    assert len(graded) == len(graded_cases(CONFIG.components)) and results["score"] == 0
    hidden = [r.output for r in report.results if r.case.hidden]
    # the public workers used the whole budget: before, the hidden pass had a budget of its own
    assert all("budget of 60 s for the whole submission ran out" in o for o in hidden)
    public = [r.output for r in report.results if not r.case.hidden]
    assert any("5 s of wall-clock time while using little CPU" in o for o in public)
    assert all("wall-clock time" in o or "budget of 60 s" in o for o in public)
    for _ in range(100):  # the kernel reaps the killed sleeper a moment later
        if not _leftovers(scratch)["processes"]:
            break
        time.sleep(0.05)
    assert _leftovers(scratch) == {"processes": [], "mounts": [], "sysv": [], "grading dirs": []}


@ROOT_ONLY
def test_grader_workers_die_with_a_killed_grader(tmp, scratch):
    sample = tmp / "hangs_everywhere" if (tmp / "hangs_everywhere").exists() else hostile(tmp, "hangs_everywhere")
    assert not _leftovers(scratch)["processes"]
    # only a worker that may start processes (the tensor-parallel one) can start the sleeper
    only = [arg for c in sorted(CONFIG.starts_processes) for arg in ("-k", c)]
    grader = subprocess.Popen(
        [sys.executable, "-m", "cs336_basics.staff.cli", "grade", str(sample), *only]
        + ["--results", str(tmp / "killed.json")],
        cwd=REPO,
        env=dict(os.environ, TMPDIR=str(scratch)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(6000):  # until its first worker started the sleeper (the grader's own startup: seconds)
            if _leftovers(scratch)["processes"] or grader.poll() is not None:
                break
            time.sleep(0.05)
        assert _leftovers(scratch)["processes"], "the sample's sleeper never started"
    finally:
        grader.send_signal(signal.SIGKILL)
        grader.wait()
    for _ in range(600):  # the forkserver sees the grader gone, then each worker its parent
        if not _leftovers(scratch)["processes"]:
            break
        time.sleep(0.05)
    assert not _leftovers(scratch)["processes"]
    assert not (tmp / "killed.json").exists()
    sandbox.remove_stale_homes()  # what the next grader does with the killed one's home mounts and cgroups
    cgroup.remove_stale()
    assert not _leftovers(scratch)["mounts"]


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_stale_cgroup_holding_a_killed_inner_grader_s_groups_is_removed_with_them():
    # a grader graded inside a worker-named group (a container test) and killed leaves its
    # workers' groups nested in it: the next grader removes the nested ones first, then the outer
    ready, report = os.pipe()
    owner = os.fork()
    if owner == 0:  # creates the group and a nested one holding a sleeper, then dies without removing them
        group = cgroup.create(64, 8, 0.5)
        inner = cgroup.Cgroup(1, tuple(f"{d}/cs336-worker-1-1" for d in group.dirs))
        for d in inner.dirs:
            os.mkdir(d)
        sleeper = subprocess.Popen(["sleep", "600"], preexec_fn=inner.join)
        os.write(report, f"{sleeper.pid} {' '.join(group.dirs)}".encode())
        os._exit(0)
    os.waitpid(owner, 0)
    sleeper, *dirs = os.read(ready, 4096).decode().split()
    assert cgroup.remove_stale() and not any(os.path.exists(d) for d in dirs)
    assert not os.path.exists(f"/proc/{sleeper}") or "Z" in Path(f"/proc/{sleeper}/stat").read_text().split()[2]


# ------------------------------------------------------------------ Docker's default capabilities; Gradescope's resources


def _fake_autograder(tmp: Path, name: str, submission: Path) -> tuple[Path, dict]:
    """The bundle unpacked as Gradescope does, setup.sh's permissions applied, the submission in
    place: (run_autograder, its environment)."""
    root = tmp / name / "autograder"
    source = root / "source"
    bundle = autograder.build_bundle(tmp / name / "autograder.zip")
    with zipfile.ZipFile(bundle) as z:
        z.extractall(source)
        for info in z.infolist():
            os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
    for d in (tmp / name, root):
        os.chmod(d, 0o755)
    subprocess.run(["bash", "-c", autograder.PERMISSIONS_SH], env=dict(os.environ, SOURCE=str(source)), check=True)
    shutil.copytree(submission, root / "submission")
    return source / "run_autograder", dict(os.environ, CS336_AUTOGRADER_ROOT=str(root), CS336_PYTHON=sys.executable)


@pytest.mark.skipif(container.available() is not None, reason=str(container.available()))
@pytest.mark.parametrize("name", ["reference", "handout", "reads_bundle_fixtures", "sysv_ipc_survives", "tcp_buffers"])
def test_grader_grades_under_docker_default_capabilities(tmp, name):
    submission = (
        tmp / name
        if name in ("reference", "handout")
        else (tmp / name if (tmp / name).exists() else hostile(tmp, name))
    )
    run, env = _fake_autograder(tmp, f"docker-{name}", submission)
    done = subprocess.run(container.command([str(run)]), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((run.parent.parent / "results" / "results.json").read_text())
    assert results["extra_data"]["isolation"]["level"] == "container", done.stdout[-2000:]
    assert "isolation level container" in done.stdout  # the staff console
    assert sum(t["max_score"] for t in results["tests"]) == CONFIG.max_score
    # every sample's import-time attack breaks the source rule (ctypes, sockets, /proc): 0 each
    expected = {"reference": CONFIG.max_score}.get(name, 0)
    assert results["score"] == expected, done.stdout[-3000:]
    text = json.dumps(results["tests"])
    if name == "reads_bundle_fixtures":
        seen = json.loads(re.search(r"BUNDLE(\{.*?\})BUNDLE", text.replace('\\"', '"')).group(1))
        assert seen["roots"] and seen["read"] == 0  # it found the bundle, and could open nothing in it
    if name == "tcp_buffers":
        assert '\\"mb\\": 0' in text and '\\"errno\\": 97' in text
    if name == "sysv_ipc_survives":
        assert not _sysv_keys() & {0x0C533600, 0x0C533601, 0x0C533602}


@pytest.mark.skipif(container.available() is not None, reason=str(container.available()))
def test_grader_refuses_to_grade_where_the_workers_cannot_read_the_environment(tmp):
    """The interpreter's environment (here the venv, reached through a mode-700 directory, as a
    bundle unpacked under /root or a pyenv Python would be) is closed to the workers' users: the
    grader says so and exits non-zero, and results.json holds that message and no test (before:
    every case failed on a module imported after the user switch, 0 points, exit 0)."""
    run, env = _fake_autograder(tmp, "docker-unreadable-env", tmp / "reference")
    private = Path(tempfile.mkdtemp(prefix="cs336-private-"))  # mode 700, in the world-searchable /tmp
    try:
        os.symlink(sys.prefix, private / "venv")
        env["CS336_PYTHON"] = str(private / "venv" / "bin" / "python")
        done = subprocess.run(container.command([str(run)]), env=env, capture_output=True, text=True)
    finally:
        shutil.rmtree(private)
    path = run.parent.parent / "results" / "results.json"
    assert done.returncode != 0 and path.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(path.read_text())
    assert results["tests"] == [] and "score" not in results, done.stdout[-3000:]
    assert f"cannot read {private}," in results["output"], results["output"]
    assert "UV_PYTHON_INSTALL_DIR=/opt/uv-python" in results["output"]


REFUSED_BY_THE_WORKER = """
import sys
from dataclasses import replace
from pathlib import Path
from cs336_basics.staff.grader import environment, runner
from cs336_basics.staff.grader.config import load_config

environment.problem = lambda: "cannot read /nowhere: the fix"  # the forked workers inherit it
runner.start_forkserver(fork_from_here=True)
from cs336_basics.staff.grader.grade import grade

config = load_config()
try:
    report = grade(Path(sys.argv[1]), replace(config, points={"silu": 5}))
    print("graded", report.score)
except runner.WorkerCannotStart as e:
    print("refused:", e)
"""


def test_grader_refuses_when_a_worker_fails_before_any_student_code(tmp_path):
    """The worker's own check, below preflight's: a grading whose first worker finds its environment
    unusable raises WorkerCannotStart (no per-case zeros)."""
    (tmp_path / "sub" / "cs336_basics").mkdir(parents=True)
    (tmp_path / "sub" / "cs336_basics" / "__init__.py").write_text("")
    os.chmod(tmp_path, 0o755)
    done = subprocess.run(
        [sys.executable, "-c", REFUSED_BY_THE_WORKER, str(tmp_path / "sub")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.stdout.strip() == "refused: cannot read /nowhere: the fix", done.stdout[-2000:] + done.stderr[-2000:]


def test_grader_container_out_of_memory_is_the_grader_s_problem_not_the_student_s(monkeypatch, tmp_path):
    spec = sandbox.SandboxSpec(None, str(tmp_path), (), str(tmp_path), CONFIG.limits, isolate=False)
    run = runner.Runner(tmp_path, tmp_path, tmp_path, tmp_path, spec, reveal=False)
    monkeypatch.setattr(cgroup, "oom_kills", lambda: run.oom_before + 1)  # the container's OOM killer struck
    assert not run._failure(["parallel"], True, -signal.SIGKILL, b"", oom=False)["parallel"].grader_out_of_memory
    run.cgroup_capped = True  # ... while the worker's own group held it below what the container had left
    failed = run._failure(["parallel", "generate"], True, -signal.SIGKILL, b"", oom=False)
    assert list(failed) == ["parallel"] and failed["parallel"].grader_out_of_memory
    assert "container ran out of memory" in failed["parallel"].message.replace("container's", "container")
    cases = [c for c in graded_cases(CONFIG.components) if c.component == "parallel"]
    each = Fraction(CONFIG.points["parallel"]) / len(cases)
    report = GradeReport(
        "x",
        [CaseResult(c, True, failed["parallel"].message, each, each) for c in cases],
        dict(CONFIG.points),
        grader_problems=[c.name for c in cases],
    )
    results = to_gradescope(report)
    assert results["score"] == CONFIG.points["parallel"]  # awarded, not docked
    assert "ran out of memory" in results["output"] and "not taken from you" in results["output"]
    assert results["extra_data"]["not_graded_grader_out_of_memory"] == [c.name for c in cases]
    monkeypatch.setattr(cgroup, "oom_kills", lambda: run.oom_before)  # the worker alone was killed: its fault
    assert not run._failure(["parallel"], True, -signal.SIGKILL, b"", oom=False)["parallel"].grader_out_of_memory


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_grader_reference_scores_full_marks_in_768_mb_and_half_a_cpu(tmp):
    run, env = _fake_autograder(tmp, "gradescope-768", tmp / "reference")
    group = cgroup.create(768, 4096, 0.5)  # Gradescope's default container: 768 MB, half a CPU
    try:
        done = subprocess.run([str(run)], env=env, capture_output=True, text=True, preexec_fn=group.join)
        usage = group.usage()
    finally:
        group.remove()
    results = json.loads((run.parent.parent / "results" / "results.json").read_text())
    assert results["score"] == CONFIG.max_score, done.stdout[-3000:]
    assert results["extra_data"]["not_graded_grader_out_of_memory"] == [], done.stdout[-3000:]
    assert usage.peak_bytes <= 768 * 2**20
