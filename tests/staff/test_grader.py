"""Staff only: the grader (cs336_basics/staff/grader) on sample submissions built from the handout.

Each sample is the handout with the reference's solution regions restored (all or some), or a
hostile sample of tests/staff/hostile/ (its README says the attack) applied by the one builder,
tests/staff/_hostile.py; graded once per module, in parallel, with a few CPU seconds per
component. Each must get exactly the score it deserves: the points of the components it really
implements. The cheats (reading fixture files, patching the comparison, writing results.json,
exiting early) all target the embedding component, which no other component uses, so a cheat
costs exactly its points and those of its users' embedding cases.
"""

import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from cs336_basics import REPO
from cs336_basics.staff.cases import BY_NAME, CASES
from cs336_basics.staff.grader import autograder, runner, worker
from cs336_basics.staff.grader.cases import graded_cases
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.grade import grade
from cs336_basics.staff.grader.gradebook import grade_all
from cs336_basics.staff.grader.report import QUANTUM, to_gradescope, write_results
from cs336_basics.staff.grader.sandbox import SYSTEM_DIRS
from cs336_basics.staff.grader.submission import SubmissionError, copy_package, extract_zip, find_package
from cs336_basics.staff.handout import build_handout, restore_solutions
from tests.staff._hostile import build, without_source_rule
from tests.staff._limits import quick_limits

CONFIG = load_config()
POINTS = CONFIG.points
# Limits count CPU seconds (the worker's cgroup, its processes included); 8 s per component keeps
# the infinite loop's cost down (tests/staff/_limits.py). softmax's limit of its own: the infinite
# loop there stops at it (Limits.cpu_s_for). The wall-clock budget for the whole grading
# (Gradescope's timeout) is lifted here: a test of it sets its own.
TEST_CONFIG = replace(CONFIG, limits=quick_limits(CONFIG, 8, own=(("softmax", 6),), startup_s=8, total_s=3600))
# For the samples that test the sandbox's limits on processes (fork bombs, spinners, lingering and
# double-forked processes, a gloo group): their components run as the tensor-parallel one does, in
# a worker of their own that may start processes; every other worker refuses to (seccomp).
PROCESSES_CONFIG = replace(
    TEST_CONFIG, starts_processes=TEST_CONFIG.starts_processes | {"embedding", "silu", "lm", "generate"}
)
CHEATED = "embedding"  # every cheat sample replaces this component's kernel
LINGER_MARK = "cs336-grader-test-lingering-process"
LINGER_COMM = "cs336linger"  # a thread name (15 characters at most)
SPIN_COMM = "cs336spin"


def scores_if_only(*working: str) -> dict[str, float]:
    return {c: float(POINTS[c]) if c in working else 0.0 for c in POINTS}


ALL = tuple(POINTS)
# Components whose cases also run another component's code: the decoder is built from the FFN parts
# (attention calls softmax; the layer and the model call RMSNorm; the model looks up embeddings),
# and the tensor-parallel attention and model run those kernels on each rank.
USERS = {
    "embedding": ("lm", "generate", "parallel"),
    "softmax": ("attention", "mha", "block", "lm", "generate", "parallel"),
    "rmsnorm": ("ffn_block", "block", "lm", "generate", "parallel"),
    "train_bpe": ("tokenizer",),  # the tokenizer calls pretokenize.py and merge_word, train_bpe's
}
# Adapters that run fewer components' code than the rest of their component: generate's sampling
# runs no model, an initialisation check no kernel, a tensor-parallel adapter only its own layers.
RUNS_ONLY = {
    **{c.adapter: ("parallel",) for c in CASES if c.component == "parallel"},
    "run_parallel_attention": ("parallel", "softmax"),
    "run_parallel_attention_backward": ("parallel", "softmax"),
    "run_parallel_transformer_lm": ("parallel", "embedding", "softmax", "rmsnorm"),
    "run_top_p_filter": ("generate",),
    "run_next_token_distribution": ("generate", "softmax"),
    "run_sample_next_token": ("generate", "softmax"),
    **{c.adapter: () for c in CASES if c.adapter.endswith("_init_checks")},
}
# The tensor-parallel cases each run their ranks in processes of their own: a rank that ends or
# runs out of memory fails its case only, where it ends the worker of any other component.
OWN_PROCESSES = ("parallel",)


def runs(case) -> set[str]:
    """The components whose code a graded case runs."""
    adapter = BY_NAME[case.name].adapter
    if adapter in RUNS_ONLY:
        return set(RUNS_ONLY[adapter])
    return {case.component} | {b for b, users in USERS.items() if case.component in users}


def unaffected_by(*broken: str) -> tuple[str, ...]:
    """The components that use none of `broken`'s code."""
    hit = set(broken).union(*(USERS.get(b, ()) for b in broken))
    return tuple(c for c in ALL if c not in hit)


def scores_if_broken(*broken: str) -> dict[str, float]:
    """Each component's points times the share of its graded cases that run none of `broken`'s code."""
    scores = {}
    for c in ALL:
        cases = graded_cases([c])
        fine = sum(not runs(k) & set(broken) for k in cases)
        scores[c] = float(Fraction(POINTS[c]) * fine / len(cases))
    return scores


def scores_if_the_worker_ends(*broken: str) -> dict[str, float]:
    """A worker that ends while running `broken`'s code takes its component's other cases with it,
    but a tensor-parallel rank's process ends alone (OWN_PROCESSES)."""
    per_case = scores_if_broken(*broken)
    return scores_if_only(*unaffected_by(*broken)) | {c: per_case[c] for c in OWN_PROCESSES}


# ------------------------------------------------------------------ building the samples

# The samples' folders (tests/staff/hostile/<name>/, each README saying the attack) applied by the
# one builder, tests/staff/_hostile.py; those with their base in the README (handout) are stubs.
HOSTILE_SAMPLES = (
    "memorised_fixtures",
    "changes_input",
    "builtin_silu",
    "replaces_adapters",
    "patches_adapter_checks",
    "replaces_adapter_checks",
    "patches_back_builtins",
    "leaks_inputs",
    "hostile_text",
    "escapes",
    "import_error",
    "infinite_loop",
    "memory_hog",
    "reads_fixtures",
    "patches_comparison",
    "writes_results",
    "exits_early",
    "probe",
    "exhausts",
    "uses_loopback",
)


def input_digest(token_ids) -> str:
    return "SEEN" + hashlib.sha256(token_ids.numpy().tobytes()).hexdigest()[:16]


def memorised_silu_table() -> bytes:
    """torch.save'd {sha256 of the input's bytes: expected output} of the shipped public silu fixtures."""
    from cs336_basics.fixture_io import fixture_names, load_fixture

    table = {}
    for name in fixture_names("silu"):
        fx = load_fixture(name)
        x = fx.kwargs["in_features"]
        table[hashlib.sha256(x.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()] = fx.expected.to(
            fx.out_dtype
        )
    buffer = io.BytesIO()
    torch.save(table, buffer)
    return buffer.getvalue()


def sample_values(tmp: Path) -> dict:
    """The run-time values the samples' {{KEY}} placeholders name (tests/staff/_hostile.py)."""
    return {
        "REPO": str(REPO),
        "LINGER_COMM": LINGER_COMM,
        "LINGER_MARK": LINGER_MARK,
        "SPIN_COMM": SPIN_COMM,
        "MEMFD_MB": CONFIG.limits.resident_mb + 256,  # past the worker's memory
        "RESULTS_TARGETS": [str(tmp / "writes_results.json"), str(tmp / "grader_cwd" / "results.json")],
        "SILU_TABLE": memorised_silu_table(),
    }


def sample(tmp: Path, name: str, select=None) -> Path:
    """A copy of the handout at tmp/name with the reference's solution regions (those `select` picks) restored."""
    root = shutil.copytree(tmp / "handout", tmp / name)
    restore_solutions(root, REPO, select)
    return root


def build_samples(tmp: Path) -> dict[str, Path]:
    """Every sample submission, as a directory (or zip) under tmp, where the handout and the reference are."""
    samples = {"handout": tmp / "handout", "reference": tmp / "reference"}
    samples["partial"] = sample(tmp, "partial", lambda r: r.component in ("linear", "silu", "rmsnorm", "rope"))
    samples["reference_zip"] = Path(shutil.make_archive(str(tmp / "reference_zip"), "zip", tmp, "reference"))
    values = sample_values(tmp)
    for name in HOSTILE_SAMPLES:
        samples[name] = build(name, tmp / "reference", tmp, values, handout=tmp / "handout")
    # the same sample, graded without the sandbox: the control
    unsandboxed = tmp / "unsandboxed"
    samples["reads_fixtures_unsandboxed"] = build("reads_fixtures", tmp / "reference", unsandboxed, values)
    # a zip member that climbs out of the extraction directory: no folder can hold it
    unsafe = samples["unsafe_zip"] = tmp / "unsafe.zip"
    with zipfile.ZipFile(unsafe, "w") as z:
        z.writestr("cs336_basics/__init__.py", "")
        z.writestr("../escaped.py", "print('outside')\n")
    return samples


# ------------------------------------------------------------------ fixtures: build once, grade in parallel


def _fake_gradescope(tmp: Path, submission: Path) -> tuple[Path, dict]:
    """Unpack the bundle as Gradescope does (modes kept) into tmp/autograder/source, with the
    submission in tmp/autograder/submission; returns (bundle zip, environment for run_autograder)."""
    bundle = autograder.build_bundle(tmp / "autograder.zip")
    source = tmp / "autograder" / "source"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(source)
        for info in z.infolist():
            os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copytree(submission, tmp / "autograder" / "submission")
    env = dict(os.environ, CS336_AUTOGRADER_ROOT=str(tmp / "autograder"), CS336_PYTHON=sys.executable)
    return bundle, env


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The handout and the reference built from it; the forkserver starts first, to import torch meanwhile."""
    runner.start_forkserver()
    tmp = tmp_path_factory.mktemp("samples")
    build_handout(tmp / "handout", lock=False)
    return sample(tmp, "reference")


@pytest.fixture(scope="module")
def gradescope_run(reference, tmp_path_factory):
    """run_autograder started on the reference against a fake /autograder, in the background
    while the other samples are built and graded; the test waits for it."""
    tmp = tmp_path_factory.mktemp("gradescope")
    bundle, env = _fake_gradescope(tmp, reference)
    run = tmp / "autograder" / "source" / "run_autograder"
    proc = subprocess.Popen([str(run)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    yield bundle, tmp / "autograder", proc
    proc.kill()


@pytest.fixture(scope="module")
def samples(reference, gradescope_run) -> dict[str, Path]:
    return build_samples(reference.parent)


@pytest.fixture(scope="module")
def graded_first(reference) -> dict:
    """The first tier's gradings: the reference and the untouched handout, in parallel."""
    samples = {"reference": reference, "handout": reference.parent / "handout"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(grade, path, TEST_CONFIG) for name, path in samples.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.fixture(scope="module")
def graded(samples, graded_first) -> dict:
    """{sample: GradeReport}, all graded in parallel (threads; the workers are processes), with
    the source rule off: these samples test the sandbox and the recorder, each alone."""
    rest = {name: path for name, path in samples.items() if name not in graded_first}
    configs = {name: TEST_CONFIG for name in rest}
    configs["reads_fixtures_unsandboxed"] = replace(TEST_CONFIG, isolate=False)
    configs |= {name: PROCESSES_CONFIG for name in ("escapes", "exhausts", "uses_loopback", "writes_results")}
    with without_source_rule(), ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(grade, path, configs[name]) for name, path in rest.items()}
        reports = graded_first | {name: f.result() for name, f in futures.items()}
    write_results(reports["writes_results"], samples["handout"].parent / "writes_results.json")
    return reports


def outputs_of(report, hidden: bool) -> list[str]:
    return [r.output for r in report.results if r.case.hidden == hidden]


def outputs(report, component: str, hidden: bool | None = None) -> list[str]:
    """The messages of component's cases that run its code (not its initialisation checks)."""
    return [
        r.output
        for r in report.results
        if r.case.component == component and component in runs(r.case) and hidden in (None, r.case.hidden)
    ]


# ------------------------------------------------------------------ scores


def test_grader_reference_scores_full_marks(graded_first):
    report = graded_first["reference"]
    assert report.component_scores() == scores_if_only(*ALL)
    assert report.score == report.max_score == CONFIG.max_score
    assert all(r.passed for r in report.results)


def test_grader_untouched_handout_scores_zero(graded_first):
    report = graded_first["handout"]
    assert report.score == 0
    assert all("NotImplementedError" in o for o in outputs_of(report, hidden=False))
    assert all(o.endswith("raised an exception") for o in outputs_of(report, hidden=True))  # no type: fewer bits


def test_grader_partial_submission_scores_exactly_its_finished_components(graded):
    # rope needs none of the others: its stubs restored alone earn its points
    assert graded["partial"].component_scores() == scores_if_only("linear", "silu", "rmsnorm", "rope")


def test_grader_memorised_public_fixtures_score_zero(graded):
    # public cases are graded on inputs drawn at grading time: the shipped fixtures earn nothing
    report = graded["memorised_fixtures"]
    assert report.component_scores()["silu"] == 0
    assert all("KeyError" in r.output for r in report.results if r.case.component == "silu" and not r.case.hidden)


def test_grader_kernel_that_changes_its_input_loses_that_component(graded):
    report = graded["changes_input"]
    scores = report.component_scores()
    assert 0 < scores["ffn_block"] < POINTS["ffn_block"]  # its RMSNorm cases only
    fine = unaffected_by("rmsnorm")
    assert {c: scores[c] for c in fine} == {c: float(POINTS[c]) for c in fine}
    rmsnorm = [r for r in report.results if r.case.component == "rmsnorm"]
    runs_the_kernel = [r for r in rmsnorm if "rmsnorm" in runs(r.case)]
    assert not any(r.passed for r in runs_the_kernel)  # a correct initialisation still scores
    assert all("changed its input in_features in place" in r.output for r in runs_the_kernel if not r.case.hidden)


def test_grader_public_cases_are_drawn_anew_and_the_reference_passes_them(tmp_path):
    from cs336_basics.fixture_io import load_fixture
    from cs336_basics.staff.cases import PUBLIC_CASES
    from cs336_basics.staff.grader.fresh import fresh_public_fixtures

    stored = {c.name: load_fixture(c.name) for c in PUBLIC_CASES}
    notes = []
    fresh = fresh_public_fixtures(stored, list(stored), notes)
    assert notes == []
    text_of_drawn_length = {"train_bpe", "tokenizer"}  # corpora, vocabularies and ids: sizes are data
    for name, fx in fresh.items():

        def flat(kwargs):  # tensors, those inside dicts (AdamW's parameters and gradients) included
            items = [(k, v) for k, v in kwargs.items() if not isinstance(v, dict)]
            items += [(f"{k}.{n}", t) for k, v in kwargs.items() if isinstance(v, dict) for n, t in v.items()]
            return {k: v for k, v in items if isinstance(v, torch.Tensor)}

        new, old = flat(fx.kwargs), flat(stored[name].kwargs)
        tensors = list(old)
        if not tensors:  # an initialisation case: its generator's seed is what is drawn, if it has one
            seeded = "seed" in stored[name].kwargs
            assert set(fx.kwargs) == set(stored[name].kwargs), name
            assert {k: v for k, v in fx.kwargs.items() if k != "seed"} == {
                k: v for k, v in stored[name].kwargs.items() if k != "seed"
            }, name
            assert not seeded or fx.kwargs["seed"] != stored[name].kwargs["seed"], name
            continue
        if fx.component in text_of_drawn_length:
            assert all(new[k].dim() == old[k].dim() and new[k].dtype == old[k].dtype for k in tensors), name
        else:
            assert all(new[k].shape == old[k].shape and new[k].dtype == old[k].dtype for k in tensors), name
        assert not all(torch.equal(new[k], old[k]) for k in tensors), name
        assert fx.tol == stored[name].tol and fx.out_dtype == stored[name].out_dtype


def test_grader_single_process_computation_gives_each_parallel_case_s_expected_output():
    # fresh draws of the tensor-parallel cases are judged against the single-process computation,
    # one more correct implementation: it may differ from the stored expected output by the case's
    # floor, as the reference recomputed on another CPU may (make_fixtures.drift_bound)
    from cs336_basics.fixture_io import load_fixture
    from cs336_basics.staff.cases import CASES
    from cs336_basics.staff.grader import single_process as S
    from cs336_basics.staff.grader.fresh import _reference
    from cs336_basics.staff.make_fixtures import drift_bound
    from cs336_basics.testing import scaled_error

    parallel = [c for c in CASES if c.component == "parallel"]
    assert {c.adapter for c in parallel} == set(S.FORWARD) | set(S.BACKWARD) | S.COLLECTIVES
    for case in parallel:
        fx = load_fixture(case.name, case.directory)
        expected = _reference(fx.adapter, fx.kwargs, fx, float64=True)
        assert float(scaled_error(expected, fx.expected).max()) <= drift_bound(case), case.name


def test_grader_draws_fresh_parallel_cases_without_starting_a_process_group(monkeypatch):
    # the grader's own process is multi-threaded: ranks forked there, bounded by a wall-clock
    # timeout, made a grade depend on load (a 2-rank backward timed out under CI's load)
    from cs336_basics.fixture_io import load_fixture
    from cs336_basics.nn.parallel import launch
    from cs336_basics.staff.cases import PUBLIC_CASES
    from cs336_basics.staff.grader.fresh import fresh_fixture

    def refuse(*args, **kwargs):
        raise AssertionError("the grader started a process group")

    monkeypatch.setattr(launch, "launch", refuse)
    for case in [c for c in PUBLIC_CASES if c.component == "parallel"]:
        assert fresh_fixture(load_fixture(case.name), seed=1) is not None, case.name


def test_grader_zip_of_reference_scores_full_marks(graded):
    assert graded["reference_zip"].score == CONFIG.max_score


def test_grader_import_error_scores_zero_and_says_why(graded):
    report = graded["import_error"]
    assert report.score == 0
    assert all("No module named 'cs336_no_such_module'" in r.output for r in report.results if not r.case.hidden)
    assert all(r.output.endswith("failed (the public tests show why)") for r in report.results if r.case.hidden)


def test_grader_infinite_loop_loses_only_that_component(graded):
    report = graded["infinite_loop"]
    failures = [r.output[:400] for r in report.results if not r.passed and r.case.component != "softmax"]
    assert report.component_scores() == scores_if_only(*unaffected_by("softmax")), failures
    assert all(f"CPU time limit of {TEST_CONFIG.limits.cpu_s('softmax'):g} s" in o for o in outputs(report, "softmax"))


def test_grader_time_budget_fails_the_components_it_did_not_reach(samples):
    # softmax spins past the budget (its CPU limit is far above); one budget for the whole grading.
    # On a loaded machine the grader's own preparation may use the budget before any component.
    config = replace(TEST_CONFIG, limits=replace(TEST_CONFIG.limits, cpu_per_component_s=60, total_s=4))
    report = grade(samples["infinite_loop"], config)
    budget = "time budget of 4 s for the whole submission ran out"
    reached = ALL[: ALL.index("softmax")]
    for r in report.results:
        if r.case.component in reached and not r.case.hidden:
            assert r.passed or budget in r.output
        else:  # softmax, the components after it, and every hidden case: no budget of their own
            assert not r.passed and budget in r.output


def test_grader_memory_hog_loses_only_that_component(graded):
    report = graded["memory_hog"]
    assert report.component_scores() == scores_if_broken(CHEATED)
    assert all("out of memory" in o for o in outputs(report, CHEATED))


def test_grader_early_exit_loses_only_that_component(graded):
    report = graded["exits_early"]
    assert report.component_scores() == scores_if_the_worker_ends(CHEATED)
    assert all("exited with code 0" in o for o in outputs(report, CHEATED, hidden=False))
    assert all("ended while running embedding" in o for o in outputs(report, CHEATED, hidden=True))


# ------------------------------------------------------------------ cheats


def test_grader_component_calling_its_builtin_scores_zero_naming_it(graded):
    report = graded["builtin_silu"]
    scores = report.component_scores()
    assert scores["silu"] == 0
    assert all("F.silu" in o and "aten.silu" in o for o in outputs(report, "silu", hidden=False))
    assert all(
        "called a PyTorch built-in or library code silu may not use" in o for o in outputs(report, "silu", hidden=True)
    )
    assert {c: scores[c] for c in ("linear", "embedding", "gelu", "softmax", "rmsnorm", "layernorm")} == {
        c: float(POINTS[c]) for c in ("linear", "embedding", "gelu", "softmax", "rmsnorm", "layernorm")
    }


def test_grader_stub_replacing_the_adapters_module_scores_zero(graded):
    report = graded["replaces_adapters"]
    assert report.score == 0
    assert all("replaced the grader's adapters module" in r.output for r in report.results if not r.case.hidden)
    assert all("changed the grader's adapters" in r.output for r in report.results if r.case.hidden)


def test_grader_submission_patching_the_adapter_checks_scores_zero(graded):
    # without the check, its broken get_batch scores full marks (the sample's README)
    report = graded["patches_adapter_checks"]
    assert report.score == 0
    public = [r.output for r in report.results if not r.case.hidden]
    assert all("the grader's adapter_checks function get_batch_checks was replaced" in o for o in public)
    assert all("changed the grader's adapters" in r.output for r in report.results if r.case.hidden)


def test_grader_submission_replacing_the_adapter_checks_module_scores_zero(graded):
    # without the check, its broken get_batch scores full marks (the sample's README)
    report = graded["replaces_adapter_checks"]
    assert report.score == 0
    public = [r.output for r in report.results if not r.case.hidden]
    assert all("replaced the grader's adapter_checks module in the adapters" in o for o in public)
    assert all("changed the grader's adapters" in r.output for r in report.results if r.case.hidden)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda m: setattr(m, "INIT_CUT", 1e9), "INIT_CUT"),  # a bound the checks read at call time
        (lambda m: setattr(m.mean_bound, "__defaults__", (1e9,)), "mean_bound"),  # a default they take
        (lambda m: setattr(m.binomial_bounds, "__code__", (lambda n, p, alpha: (0, n)).__code__), "binomial_bounds"),
        (lambda m: setattr(m, "extra", None), "extra"),
    ],
)
def test_grader_worker_sees_any_change_to_the_adapter_checks_namespace(tmp_path, change, named):
    shutil.copyfile(REPO / "tests" / "adapter_checks.py", tmp_path / "adapter_checks.py")
    module, _, _ = worker._pristine_checks(str(tmp_path))
    state = worker._state(module.__dict__)
    worker._check_state(module.__dict__, state, worker.CHECKS)  # as the grader ran it: unchanged
    change(module)
    with pytest.raises(worker.Tampered, match=f"changed {named} in the grader's adapter_checks"):
        worker._check_state(module.__dict__, state, worker.CHECKS)


def test_grader_stub_pointing_its_kernels_at_builtins_scores_zero(graded):
    report = graded["patches_back_builtins"]
    assert report.score == 0
    for component, name in (("silu", "aten.silu"), ("gelu", "F.gelu"), ("softmax", "Tensor.softmax")):
        assert all(name in o for o in outputs(report, component, hidden=False))


def test_grader_fixture_reading_cheat_works_without_the_sandbox(graded):
    # the control: the cheat is real (it answers every hidden case from the files it reads), so the
    # next test shows the sandbox is what stops it; public cases are drawn at grading time, which
    # no stored file holds
    report = graded["reads_fixtures_unsandboxed"]
    # (lm and generate look up embeddings of ids no fixture holds: their cases fail with it)
    assert all(r.passed for r in report.results if r.case.hidden and r.case.component not in USERS[CHEATED])
    assert not any(
        r.passed
        for r in report.results
        if r.case.component == CHEATED and CHEATED in runs(r.case) and not r.case.hidden
    )


def test_grader_reading_fixture_files_finds_nothing(graded):
    report = graded["reads_fixtures"]
    assert report.component_scores() == scores_if_broken(CHEATED)
    assert all("no fixture matched among 0 found" in o for o in outputs(report, CHEATED, hidden=False))


def test_grader_patching_the_comparison_changes_nothing(graded):
    assert graded["patches_comparison"].component_scores() == scores_if_broken(CHEATED)


def test_grader_writing_results_json_changes_nothing(graded, samples):
    tmp = samples["handout"].parent
    written = json.loads((tmp / "writes_results.json").read_text())
    assert written == to_gradescope(graded["writes_results"])
    # each test's max_score is its share rounded to a multiple of 1/QUANTUM
    expected = sum(scores_if_broken(CHEATED).values())
    assert written["score"] == pytest.approx(expected, rel=0, abs=len(graded_cases(CONFIG.components)) / QUANTUM)
    assert not (tmp / "grader_cwd" / "results.json").exists()


def test_grader_kills_processes_the_submission_left_behind(graded):
    lingering = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if LINGER_MARK in Path(f"/proc/{pid}/cmdline").read_text():
                lingering.append(pid)
        except OSError:
            pass
    assert not lingering


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root; without it the worker runs as the grader")
def test_grader_worker_runs_unprivileged_without_network_or_staff_files(graded):
    output = outputs(graded["probe"], CHEATED, hidden=False)[0]
    seen = json.loads(re.search(r"PROBE(\{.*\})PROBE", output).group(1))
    assert seen["uid"] not in (0, os.getuid())
    assert set(seen["repo"]) <= {".venv"}  # the staff repository is an empty directory
    assert seen["hidden"] in ("FileNotFoundError", "PermissionError")
    assert "Address family not supported" in seen["network"]  # no AF_INET socket outside the network components
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "OMP_NUM_THREADS", "PYTHONDONTWRITEBYTECODE"}
    # /tmp holds only its own sandbox, and the path down to the virtualenv when that lives in /tmp
    prefixes = [Path(os.path.realpath(p)).parts for p in (sys.prefix, sys.base_prefix)]
    venv_in_tmp = {parts[2] for parts in prefixes if parts[1] == "tmp" and len(parts) > 2}
    sandboxes = [name for name in seen["tmp"] if name not in venv_in_tmp]
    assert len(sandboxes) == 1 and sandboxes[0].startswith("cs336-grade-")
    python = {parts[1] for parts in prefixes}
    assert set(seen["root"]) <= {d.strip("/") for d in SYSTEM_DIRS} | {"tmp"} | python  # a root of its own


# ------------------------------------------------------------------ results.json


@pytest.mark.parametrize("name", ["reference", "handout", "infinite_loop", "exits_early", "import_error", "unsafe_zip"])
def test_grader_results_json_lists_every_test_with_max_score(graded, name):
    data = to_gradescope(graded[name])
    cases = graded_cases(CONFIG.components)
    # every graded case, in order; then, where the static check flagged lines, its 0-point review
    graded_tests = [t for t in data["tests"] if t["max_score"] > 0]
    assert [t["name"] for t in graded_tests] == [c.title for c in cases]
    assert len(data["tests"]) - len(graded_tests) == (1 if graded[name].review else 0)
    assert sum(t["max_score"] for t in data["tests"]) == CONFIG.max_score  # exactly: binary fractions
    assert data["score"] == sum(t["score"] for t in data["tests"])
    assert abs(data["score"] - graded[name].score) <= len(cases) / 1024  # each share rounded once
    for test, case in zip(graded_tests, cases, strict=True):
        assert test["visibility"] == ("after_published" if case.hidden else "visible")
        assert test["status"] == ("passed" if test["score"] == test["max_score"] else "failed")
        assert test["output"]


def _escapes(graded) -> dict:
    output = outputs(graded["escapes"], CHEATED, hidden=False)[0]
    return json.loads(re.search(r"ESCAPES(\{.*\})ESCAPES", output).group(1))


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
def test_grader_worker_cannot_open_other_socket_families(graded):
    import errno

    assert _escapes(graded)["vsock"] == errno.EAFNOSUPPORT


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
def test_grader_worker_cannot_write_or_lock_the_virtualenv(graded):
    seen = _escapes(graded)
    assert seen["lock_rw"] != "opened"
    assert seen["lock_inode"] != os.stat(Path(sys.prefix) / ".lock").st_ino


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
def test_grader_worker_writes_at_most_its_tmpfs_sizes(graded):
    assert _escapes(graded)["disk_mb"] <= CONFIG.limits.disk_mb + 16  # its home, and /tmp (16 MB)


def _threads_named(comm: str) -> list[str]:
    found = []
    for path in Path("/proc").glob("[0-9]*/task/*/comm"):
        try:
            if path.read_text().strip() == comm:
                found.append(str(path))
        except OSError:
            pass
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
def test_grader_kills_setsid_double_forks_and_zombie_leaders_with_live_threads(graded):
    import time

    assert "disk_mb" in _escapes(graded)  # the sample ran
    for _ in range(40):  # the kernel tears a PID namespace down asynchronously
        if not _threads_named(LINGER_COMM):
            break
        time.sleep(0.05)
    assert not _threads_named(LINGER_COMM)


def test_grader_hidden_failures_do_not_show_expected_values(graded):
    report = graded["patches_comparison"]
    assert all(
        o.endswith("wrong output (its shape, dtype or values; the public tests of this component say which)")
        for o in outputs(report, CHEATED, hidden=True)
    )
    assert all("worst at index" in o for o in outputs(report, CHEATED, hidden=False))


def test_grader_no_hidden_input_reaches_results_json(graded):
    from cs336_basics.fixture_io import load_fixture

    report = graded["leaks_inputs"]
    text = json.dumps(to_gradescope(report))
    cases = [c for c in graded_cases(CONFIG.components) if c.component == CHEATED and CHEATED in runs(c)]
    hidden = [input_digest(load_fixture(c.path.stem, c.path.parent).kwargs["token_ids"]) for c in cases if c.hidden]
    shown = set(re.findall(r"SEEN[0-9a-f]{16}", text))
    assert len(shown) >= sum(not c.hidden for c in cases)  # the control: the leak works for what a worker may show
    assert hidden and not any(d in text for d in hidden)
    silu_hidden = [r for r in report.results if r.case.component == "silu" and r.case.hidden]
    assert all(r.output == f"{BY_NAME[r.case.name].adapter} raised an exception" for r in silu_hidden)


def test_grader_worker_text_is_plain_bounded_and_never_a_staff_note(graded, tmp_path):
    from cs336_basics.staff.grader.report import MAX_RESULTS_BYTES, summary_table
    from cs336_basics.staff.grader.sanitize import MAX_OUTPUT_CHARS

    report = graded["hostile_text"]
    raw = write_results(report, tmp_path / "results.json").read_bytes()
    assert len(raw) <= MAX_RESULTS_BYTES
    data = json.loads(raw.decode("utf-8"))  # strict UTF-8
    texts = [t["output"] for t in data["tests"]]
    assert all(len(t) <= MAX_OUTPUT_CHARS for t in texts)
    assert not any(ch in t for t in texts for ch in ("\x1b", "\ud800"))
    assert any("FORGED-TEXT" in t for t in texts)  # the text is shown, made plain
    assert not any("FORGED" in n for n in report.notes)
    assert "\x1b" not in summary_table(report)
    assert report.component_scores()["silu"] == 0
    scores = report.component_scores()
    assert {c: scores[c] for c in ("linear", "gelu", "softmax")} == {
        c: float(POINTS[c]) for c in ("linear", "gelu", "softmax")
    }


def test_grader_unsafe_zip_scores_zero_with_a_message(graded):
    report = graded["unsafe_zip"]
    assert report.score == 0
    assert all("unsafe path in the zip: '../escaped.py'" in r.output for r in report.results)


@pytest.mark.parametrize("member", ["../up.py", "/abs.py", "link"], ids=["parent", "absolute", "symlink"])
def test_grader_zip_extraction_rejects_escaping_members(tmp_path, member):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        info = zipfile.ZipInfo(member)
        if member == "link":
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    with pytest.raises(SubmissionError):
        extract_zip(bad, tmp_path / "out")
    assert not (tmp_path / "up.py").exists()


def test_grader_copies_no_symlinks_from_a_submission(tmp_path):
    sub = tmp_path / "sub"
    (sub / "cs336_basics").mkdir(parents=True)
    (sub / "cs336_basics" / "__init__.py").write_text("")
    (sub / "cs336_basics" / "secret.py").symlink_to(REPO / "cs336_basics" / "staff" / "cases" / "__init__.py")
    (sub / "cs336_basics" / "fixtures").symlink_to(REPO / "hidden_fixtures")
    copy_package(find_package(sub), tmp_path / "copy")
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["__init__.py"]


def test_grader_does_not_follow_a_symlinked_package(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "cs336_basics").symlink_to(REPO / "cs336_basics")
    with pytest.raises(SubmissionError, match="no cs336_basics/ package"):
        find_package(tmp_path / "sub")


def test_grader_takes_each_tolerance_from_the_fixture_file_which_holds_the_registry_s():
    graded = graded_cases(CONFIG.components)
    assert {c.name for c in graded} == set(BY_NAME)
    assert all(c.tol == BY_NAME[c.name].tol and c.hidden == BY_NAME[c.name].hidden for c in graded)


# ------------------------------------------------------------------ grade-all and the Gradescope bundle


def test_grader_grade_all_writes_gradebook_and_results(graded, samples, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copytree(samples["partial"], inbox / "alice")
    shutil.copy(samples["reference_zip"], inbox / "bob.zip")
    # memory (memfd past the limit), disk (fills its home and /tmp), processes (fork bomb, CPU
    # spinners), all while the others are graded
    shutil.copytree(samples["exhausts"], inbox / "carol")
    with without_source_rule():  # carol's own source would cost her every component first
        reports = grade_all(
            inbox,
            tmp_path / "results",
            tmp_path / "gradebook.csv",
            jobs=2,
            config=PROCESSES_CONFIG,
            echo=lambda line: None,
        )
    rows = (tmp_path / "gradebook.csv").read_text().splitlines()
    partial = sum(POINTS[c] for c in ("linear", "silu", "rmsnorm", "rope"))
    assert rows[0] == ",".join(["submission", *POINTS, "total", "max_score", "review"])
    assert rows[1].startswith("alice,") and rows[1].endswith(f",{partial:g},{CONFIG.max_score:g},0")
    assert rows[2].startswith("bob.zip,") and rows[2].endswith(f",{CONFIG.max_score:g},{CONFIG.max_score:g},0")
    assert [r.score for r in reports[:2]] == [partial, CONFIG.max_score]
    if os.geteuid() == 0:  # the cgroup kills carol's worker; without root its memfd fits
        assert reports[2].component_scores() == scores_if_the_worker_ends(CHEATED)
    assert json.loads((tmp_path / "results" / "alice.json").read_text())["score"] == partial
    assert json.loads((tmp_path / "results" / "bob.zip.json").read_text())["score"] == CONFIG.max_score


def test_grader_autograder_bundle_has_scripts_and_grading_files(gradescope_run):
    bundle = gradescope_run[0]
    with zipfile.ZipFile(bundle) as z:
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    hidden = {c.path.name for c in graded_cases(CONFIG.components) if c.hidden}
    assert hidden and {f"hidden_fixtures/{n}" for n in hidden} <= set(modes)
    for name in (
        "pyproject.toml",
        "uv.lock",
        "tests/adapters.py",
        "cs336_basics/staff/grading.toml",
        "cs336_basics/staff/grader/grade.py",
        "cs336_basics/staff/cases/__init__.py",
        "cs336_basics/staff/cases/case.py",
        "fixtures/linear.safetensors",
    ):
        assert name in modes
    assert not any("__pycache__" in n for n in modes)
    assert [n for n in modes if n.startswith("tests/")] == ["tests/adapters.py", "tests/adapter_checks.py"]


def test_grader_autograder_bundle_takes_every_file_from_the_repo_it_is_given(tmp_path):
    copy = tmp_path / "repo"
    for top in ("cs336_basics", "fixtures", "hidden_fixtures"):
        shutil.copytree(REPO / top, copy / top, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "tests").mkdir()
    for name in ("pyproject.toml", "uv.lock", "README.md", "tests/adapters.py", "tests/adapter_checks.py"):
        shutil.copyfile(REPO / name, copy / name)
    (copy / "cs336_basics" / "only_in_the_copy.py").write_text("")
    files = autograder.bundle_files(copy)
    assert Path("cs336_basics/only_in_the_copy.py") in files
    assert all((copy / f).is_file() for f in files)


def test_grader_autograder_bundle_grades_a_fake_gradescope_layout(gradescope_run):
    _, root, proc = gradescope_run
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, log
    assert f"grader and fixtures: {root / 'source'}" in log  # the bundle's grader, not this checkout's
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == CONFIG.max_score, log
    assert len(results["tests"]) == len(graded_cases(CONFIG.components))


def test_grader_zip_with_a_corrupt_member_is_a_submission_error(tmp_path):
    bad = tmp_path / "corrupt.zip"
    with zipfile.ZipFile(bad, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("cs336_basics/__init__.py", "".join(f"x{i} = {i * 7919 % 104729}\n" for i in range(400)))
    data = bytearray(bad.read_bytes())
    start = data.index(b"__init__.py") + len("__init__.py")  # the compressed bytes follow the local header
    data[start + 100 : start + 140] = b"\xff" * 40  # well inside them
    bad.write_bytes(bytes(data))
    with pytest.raises(SubmissionError, match="could not extract 'cs336_basics/__init__.py' from the zip"):
        extract_zip(bad, tmp_path / "out")


def test_grader_command_refuses_to_grade_without_root_unless_told(monkeypatch, capsys, tmp_path):
    from cs336_basics.staff.cli import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    (tmp_path / "alice").mkdir()  # an empty folder is refused before: tests/staff/test_cli_errors.py
    assert main(["grade", str(tmp_path), "--results", str(tmp_path / "r.json")]) == 2
    assert "refusing to grade without root" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
    assert main(["grade-all", str(tmp_path)]) == 2


# ------------------------------------------------------------------ the worker's cgroup, loopback, paths, preflight


def _exhausts(graded) -> dict:
    output = outputs(graded["exhausts"], CHEATED, hidden=False)[0]
    return json.loads(re.search(r"EXHAUSTS(\{.*\})EXHAUSTS", output).group(1))


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_grader_memfd_past_the_memory_limit_loses_only_that_component_saying_out_of_memory(graded):
    report = graded["exhausts"]
    assert report.component_scores() == scores_if_the_worker_ends(CHEATED)
    limit = f"at most {CONFIG.limits.resident_mb} MB"
    assert all("ran out of memory" in o and limit in o for o in outputs(report, CHEATED))


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_grader_fork_bomb_is_bounded_by_the_process_limit(graded):
    assert 0 < _exhausts(graded)["forks"] < CONFIG.limits.processes


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_grader_background_spinners_get_at_most_the_cpu_quota_and_are_killed(graded):
    import time

    # 3 spinners on this 2-core machine get ~2 CPUs without the quota; the kernel's CFS
    # bandwidth control holds a group to its quota per 100 ms period, so 1 s of wall time holds
    # at most cpus + a period's overrun and the 10 ms tick's rounding
    assert _exhausts(graded)["cpus"] <= CONFIG.limits.cpus + 0.15
    for _ in range(40):
        if not _threads_named(SPIN_COMM):
            break
        time.sleep(0.05)
    assert not _threads_named(SPIN_COMM)


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_grader_removes_every_worker_cgroup(graded):
    from cs336_basics.staff.grader import cgroup

    parents = cgroup._v1_parents() or {}
    left = [name for d in parents.values() for name in os.listdir(d) if name.startswith(f"cs336-worker-{os.getpid()}-")]
    assert graded["exhausts"] and not left


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_cgroup_bounds_processes_even_for_root(tmp_path):
    # root ignores RLIMIT_NPROC: only the cgroup's pids.max bounds its fork bomb
    from cs336_basics.staff.grader import cgroup

    group = cgroup.create(256, 8, 1.0)
    hold, release = os.pipe()  # the forked children wait on it
    result, report = os.pipe()
    pid = os.fork()
    if pid == 0:
        group.join()
        n = 0
        try:
            while n < 100:
                if os.fork() == 0:
                    os.read(hold, 1)
                    os._exit(0)
                n += 1
        finally:
            os.write(report, str(n).encode())
            os._exit(0)
    os.waitpid(pid, 0)
    forked = int(os.read(result, 64))  # one write; the children hold the pipe open, so no EOF
    for fd in (hold, release, result, report):
        os.close(fd)
    assert forked < 8
    assert group.remove() and not os.path.exists(group.dirs[0])


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
def test_grader_only_network_components_get_tcp_sockets_and_their_ranks_reach_only_loopback(graded):
    import errno

    output = outputs(graded["uses_loopback"], "silu", hidden=False)[0]
    seen = json.loads(re.search(r"LOOPBACK(\{.*\})LOOPBACK", output).group(1))
    assert seen == {"inet": errno.EAFNOSUPPORT, "sock_diag": errno.EAFNOSUPPORT}
    assert "parallel" in CONFIG.limits.network_components
    ranks = [o for o in outputs(graded["uses_loopback"], "parallel", hidden=False) if "REACHES" in o]
    seen = json.loads(re.search(r"REACHES(\{.*?\})REACHES", ranks[0]).group(1))
    assert seen["group"] >= 2  # inside a running gloo group on 127.0.0.1
    assert all("unreachable" in seen[a] for a in ("1.1.1.1", "10.0.0.1", "192.168.1.1"))


def test_grader_library_frames_in_tracebacks_show_no_host_path(graded):
    report = graded["uses_loopback"]
    texts = outputs(report, "gelu", hidden=False) + outputs(report, "softmax", hidden=False)
    hosts = {str(REPO), sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    assert all("<python>/" in t for t in texts)  # the innermost frame: einops, json
    assert not [h for h in hosts for t in texts if h in t]


def test_grader_package_index_names_every_module_it_holds():
    import cs336_basics.staff.grader as package

    listed = {line.split()[0] for line in package.__doc__.splitlines() if line.split()[:1]}
    listed = {name for name in listed if name.endswith(".py")}
    held = {p.name for p in Path(package.__file__).parent.glob("*.py")} - {"__init__.py"}
    assert listed == held


def test_grader_protocol_strings_are_spelled_only_in_protocol_py():
    """The worker and the grader's side name every file, progress line and metadata key of their
    protocol through protocol.py: neither spells one itself (docstrings aside)."""
    import ast

    from cs336_basics.staff.grader import protocol

    # its names and keys ("1", the tampered flag, is too short to tell from other strings)
    words = {v for k, v in vars(protocol).items() if k.isupper() and isinstance(v, str) and len(v) > 1}
    prefix, suffixes = protocol.done(""), (protocol.output_file(""), protocol.input_file(""))
    spelled = []
    for module in ("worker", "runner", "grade", "sandbox"):
        tree = ast.parse((REPO / "cs336_basics" / "staff" / "grader" / f"{module}.py").read_text())
        bodies = [n.body for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))]
        docstrings = {id(b[0].value) for b in bodies if b and isinstance(b[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if node.value in words or node.value.startswith(prefix) or node.value.endswith(suffixes):
                    spelled.append(f"{module}.py:{node.lineno}: {node.value!r}")
    assert not spelled, spelled


def test_grader_host_paths_in_worker_text_never_reach_results_json(graded):
    report = graded["uses_loopback"]
    raised = outputs(report, "layernorm", hidden=False)
    printed = outputs(report, "lr_schedule", hidden=False)
    shown = re.compile(r"PATHS cs336_basics/\S+\.py <sandbox>/public/work-\d+ <python> <python> <grader> PATHS")
    assert raised and all(shown.search(t) for t in raised)  # the exception's text
    assert shown.search(printed[0]) and "last lines of its output" in printed[0]  # the output's tail, after a crash
    results = json.dumps(to_gradescope(report))
    hosts = {
        str(REPO),
        sys.prefix,
        sys.base_prefix,
        os.path.realpath(sys.prefix),
        "cs336-grade-",
    }  # grade.py's temp dir
    assert not [h for h in hosts if h in results]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")
def test_grader_home_mounts_of_a_killed_grader_are_detached_at_the_next_start(tmp_path):
    from cs336_basics.staff.grader import sandbox

    home = tmp_path / "home"
    home.mkdir()
    code = (
        f"import os, signal; from pathlib import Path; from cs336_basics.staff.grader import sandbox, config\n"
        f"assert sandbox.mount_home(Path({str(home)!r}), 12345, config.load_config().limits)\n"
        f"os.kill(os.getpid(), signal.SIGKILL)"
    )
    subprocess.run([sys.executable, "-c", code], check=False)

    def mounted():
        return any(line.split()[4] == str(home) for line in open("/proc/self/mountinfo"))

    assert mounted()  # the control: a crashed grader leaves its mount behind
    assert str(home) in sandbox.remove_stale_homes()
    assert not mounted()


def test_grader_command_refuses_naming_each_missing_mechanism_unless_told(monkeypatch, capsys, tmp_path):
    from cs336_basics.staff.cli import main
    from cs336_basics.staff.grader import cli, preflight

    monkeypatch.setattr(preflight, "missing", lambda: {"cgroup memory/pids/cpu": "no controller", "seccomp": "EINVAL"})
    (tmp_path / "a_submission").mkdir()  # a folder with something in it: the command checks that first
    for argv in (["grade", str(tmp_path), "--results", str(tmp_path / "r.json")], ["grade-all", str(tmp_path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert (
            "refusing to grade" in err and "cgroup memory/pids/cpu: no controller" in err and "seccomp: EINVAL" in err
        )
    assert not (tmp_path / "r.json").exists()
    assert cli._refuse_without_sandbox(type("Args", (), {"allow_unsandboxed": True})()) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
def test_grader_preflight_finds_every_mechanism_here():
    from cs336_basics.staff.grader import preflight

    assert preflight.missing() == {}
