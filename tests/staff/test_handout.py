"""Staff only: the student handout built by cs336_basics/staff/handout.py.

The handout is built once per module, and two pytest runs start at once:
  - the untouched handout, with this interpreter (nothing installed; cwd = PYTHONPATH = the
    handout, whose `cs336_basics` shadows the staff one): every public test is collected, and the
    snapshot tests fail with NotImplementedError; the training run skips, naming what to write;
  - the handout filled with the reference solution, as a student runs it: `uv run pytest` in the
    handout's own environment, made by uv from the handout's pyproject and lock (offline, from
    uv's cache; kept between runs under ~/.cache/cs336-basics, keyed by the lock): its whole
    public suite passes, nothing skipped.
"""

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cs336_basics.staff import handout as H

REPO = H.REPO
HIDDEN = {"hidden_fixtures", "staff"}
SNAPSHOT = ["-k", "matches_fixture"]  # the snapshot tests: test_<component>_matches_fixture
TRAINING_RUN = "train_short_run"  # tests/test_train.py's run: skipped on the untouched handout
ABLATIONS = "train_ablation"  # tests/test_train.py's ablation runs: skipped there too
# A pytest plugin that writes every collected node id (before -k deselects any) to $PROBE_OUT.
PROBE = """import json, os, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    with open(os.environ["PROBE_OUT"], "w") as f:
        json.dump([item.nodeid for item in items], f)
"""


def _start(args: list[str], cwd: Path, log: Path, probe_dir: Path | None = None,
           extra_env: dict | None = None) -> subprocess.Popen:  # fmt: skip
    """Start args in cwd with output to the file `log` (a pipe could fill up and block the child)."""
    path = [str(cwd)] + ([str(probe_dir)] if probe_dir else [])
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(path),
        PYTHONDONTWRITEBYTECODE="1",
        PROBE_OUT=str(log.with_suffix(".ids")),
        **(extra_env or {}),
    )
    env.pop("VIRTUAL_ENV", None)  # the staff's: uv run then uses the handout's own
    env.pop("PYTEST_ADDOPTS", None)
    with open(log, "w") as out:
        return subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


def _handout_environment(root: Path) -> Path:
    """Where uv keeps the handout's environment: one per lock, reused by later runs."""
    digest = hashlib.sha256((root / "uv.lock").read_bytes() + (root / "pyproject.toml").read_bytes()).hexdigest()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "cs336-basics" / f"handout-env-{digest[:16]}"


def _pytest(root: Path, reports: Path, name: str, *args: str, own_environment: bool = False) -> subprocess.Popen:
    """pytest in root: with this interpreter, or (own_environment) with `uv run` in the handout's own."""
    python = ["uv", "run", "--locked", "--offline", "--no-progress", "python"] if own_environment else [sys.executable]
    cmd = [
        *python,
        "-m",
        "pytest",
        "-q",
        "--tb=short",
        "-p",
        "no:cacheprovider",
        "-p",
        "handout_probe",
        f"--junitxml={reports / name}.xml",
        "-o",
        "junit_family=xunit1",
        *args,
    ]
    extra = {"UV_PROJECT_ENVIRONMENT": str(_handout_environment(root))} if own_environment else {}
    return _start(cmd, root, reports / f"{name}.log", probe_dir=reports, extra_env=extra)


def _results(report: Path, root: Path) -> dict[str, tuple[str, str]]:
    """node id -> (outcome, message) from a junit report; outcome is passed, failure, error or skipped."""
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        k = next((k for k in range(len(parts), 0, -1) if (root / Path(*parts[:k])).with_suffix(".py").is_file()), 0)
        node = "::".join(["/".join(parts[:k]) + ".py", *parts[k:], case.get("name")]) if k else case.get("name")
        problem = next((case.find(t) for t in ("failure", "error", "skipped") if case.find(t) is not None), None)
        out[node] = ("passed", "") if problem is None else (problem.tag, problem.get("message") or "")
    return out


@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    return H.build_handout(tmp_path_factory.mktemp("handout") / "repo")


@pytest.fixture(scope="module")
def runs(handout, tmp_path_factory) -> dict:
    """Every subprocess at once: import check, untouched handout, restored handout."""
    restored = tmp_path_factory.mktemp("restored") / "repo"
    shutil.copytree(handout, restored)
    H.restore_solutions(restored, REPO)
    reports = tmp_path_factory.mktemp("reports")
    (reports / "handout_probe.py").write_text(PROBE)
    procs = {
        "import": _start(
            [sys.executable, "-c", "import cs336_basics, cs336_basics.nn; print(cs336_basics.__file__)"],
            handout,
            reports / "import.log",
        ),
        "stub": _pytest(handout, reports, "stub", "-k", f"matches_fixture or {TRAINING_RUN} or {ABLATIONS}", "-rs"),
        "restored": _pytest(restored, reports, "restored", own_environment=True),
    }
    out = {name: (p.wait(), (reports / f"{name}.log").read_text()) for name, p in procs.items()}
    for name in ("stub", "restored"):
        ids = reports / f"{name}.ids"
        out[f"{name}_ids"] = json.loads(ids.read_text()) if ids.exists() else []
    out["stub_results"] = _results(reports / "stub.xml", handout)
    out["restored_results"] = _results(reports / "restored.xml", restored)
    out["restored_dir"] = restored
    return out


def test_handout_imports_cleanly_and_shadows_the_staff_package(handout, runs):
    code, out = runs["import"]
    assert code == 0, out
    assert Path(out.strip().splitlines()[-1]).resolve() == (handout / "cs336_basics" / "__init__.py").resolve()


def test_handout_collects_every_public_test(handout, runs):
    code, out = runs["stub"]
    assert code == 1, f"pytest exit code {code} (1 = tests failed, 2 = collection error)\n{out[-3000:]}"
    full, stubbed = set(runs["restored_ids"]), set(runs["stub_ids"])
    assert stubbed == full, {"missing": sorted(full - stubbed), "extra": sorted(stubbed - full)}
    files = {p.relative_to(handout).as_posix() for p in (handout / "tests").glob("test_*.py")}
    assert {i.split("::")[0] for i in stubbed} == files  # no test file skipped or empty


def test_handout_snapshot_tests_of_every_component_fail_with_not_implemented(runs):
    # one test for all components, so that `pytest -k <component>` does not select it
    for component in H.COMPONENTS:
        snapshot = {n: r for n, r in runs["stub_results"].items() if f"::test_{component}_matches_fixture[" in n}
        assert snapshot, f"no snapshot test for {component}"
        wrong = {
            n: m[:200] for n, (o, m) in snapshot.items() if o != "failure" or not m.startswith("NotImplementedError")
        }
        assert not wrong, wrong


def test_handout_filled_with_the_reference_passes_its_whole_public_suite_in_its_own_environment(runs):
    code, out = runs["restored"]
    assert code == 0, out[-3000:]
    results = runs["restored_results"]
    assert set(runs["stub_results"]) <= set(results)
    left_out = set(runs["restored_ids"]) - set(results)  # deselected: the opt-in SmolLM2 tests, the GPU tier
    assert all("smollm2" in n or n.startswith("tests/test_gpu.py::") for n in left_out), sorted(left_out)
    assert all(o == "passed" for o, _ in results.values()), {n: r for n, r in results.items() if r[0] != "passed"}


def test_handout_ships_tests_fixtures_and_pytest_options_unchanged(handout):
    for rel in H.shipped_files(REPO):
        if rel.parts[0] in ("tests", "fixtures"):
            assert (handout / rel).read_bytes() == (REPO / rel).read_bytes(), rel
    staff = tomllib.loads((REPO / "pyproject.toml").read_text())
    ours = tomllib.loads((handout / "pyproject.toml").read_text())
    staff_pytest, our_pytest = staff["tool"].pop("pytest")["ini_options"], ours["tool"].pop("pytest")["ini_options"]
    staff["tool"].pop("ruff")  # the staff's lint configuration, not shipped
    # not shipped either: test_handout_uv_run_does_not_compile_the_environment_each_time
    staff["tool"]["uv"].pop("compile-bytecode")
    assert ours["tool"] == staff["tool"]
    kept = [o for o in staff_pytest.pop("addopts", "").split() if not o.startswith(H.STAFF_ONLY_ADDOPTS)]
    assert our_pytest.pop("addopts", "").split() == kept
    assert our_pytest == staff_pytest


def test_handout_runs_pytest_without_the_jaxtyping_hook(handout):
    staff = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    ours = tomllib.loads((handout / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--jaxtyping-packages" in staff["addopts"]  # the staff suite checks the annotations
    assert "jaxtyping" not in ours.get("addopts", "")


def test_handout_restore_gives_back_the_reference_package(handout, runs):
    for rel in H.shipped_files(REPO):
        if rel.parts[0] == "cs336_basics":
            assert (runs["restored_dir"] / rel).read_bytes() == (REPO / rel).read_bytes(), rel


def test_handout_restore_of_one_component_leaves_the_other_stubs(handout, tmp_path):
    partial = tmp_path / "repo"
    shutil.copytree(handout / "cs336_basics", partial / "cs336_basics")
    restored = H.restore_solutions(partial, REPO, select=lambda r: r.component == "rmsnorm")
    assert {r.qualname for r in restored} == {"functional.rmsnorm", "RMSNorm.__init__", "RMSNorm.forward"}
    text = (partial / "cs336_basics/nn/functional.py").read_text()
    assert H.BEGIN in text and 'raise NotImplementedError("Implement functional.swiglu_ffn' in text


def _distinctive_solution_lines() -> set[str]:
    """Stripped lines inside solution regions, longer than 25 characters, that appear nowhere
    outside a region in the shipped files (those may legitimately be in the handout)."""
    inside, outside = set(), set()
    for rel in H.shipped_files(REPO):
        path = REPO / rel
        if path.suffix not in (".py", ".md", ".txt", ".toml", ""):
            continue
        lines = path.read_text().splitlines()
        region_lines = set()
        if rel.parts[0] == "cs336_basics" and path.suffix == ".py":
            for r in H.solution_regions(path):
                region_lines |= set(range(r.start, r.end + 1))
        for i, line in enumerate(lines):
            (inside if i in region_lines else outside).add(line.strip())
    outside |= {line.strip() for line in (REPO / "handout" / "README.md").read_text().splitlines()}
    return {line for line in inside - outside if len(line) > 25 and not line.startswith("#")}


def test_handout_contains_no_solution_line(handout):
    needles = [H.BEGIN, H.END, *_distinctive_solution_lines()]
    assert len(needles) > 20  # the scan has something to find
    found = []
    for path in (p for p in handout.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [(str(path.relative_to(handout)), n) for n in needles if n.encode() in data]
    assert not found, found


def test_handout_contains_no_hidden_or_staff_file(handout):
    files = [p.relative_to(handout) for p in handout.rglob("*") if p.is_file()]
    assert not [f for f in files if HIDDEN & set(f.parts)]
    assert not (handout / "tests" / "staff").exists() and not (handout / ".ci").exists()
    assert (REPO / "tests" / "staff" / "test_handout.py").exists()  # the folder this excludes is where staff tests are


def test_handout_refers_to_no_staff_module_or_missing_file(handout):
    texts = {p.relative_to(handout): p.read_text() for p in handout.rglob("*") if p.suffix in (".py", ".md", ".toml")}
    assert [f for f, text in texts.items() if "cs336_basics.staff" in text or "tests/staff" in text] == []
    prose = [t for f, t in texts.items() if f.suffix == ".md"]  # the docs; test data may name files on purpose
    prose += [
        line for f, t in texts.items() if f.suffix == ".py" for line in t.splitlines() if line.lstrip().startswith("#")
    ]
    prose += [ast.get_docstring(ast.parse(t)) or "" for f, t in texts.items() if f.suffix == ".py"]
    named = {
        Path(m)
        for text in prose
        for m in re.findall(r"\b((?:tests|cs336_basics|fixtures)/[\w/.]+\.(?:py|md|safetensors))", text)
    }
    assert named and [n for n in named if not (handout / n).exists()] == []


def test_handout_testpaths_are_folders_it_has(handout):
    testpaths = tomllib.loads((handout / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    assert testpaths and all((handout / t).is_dir() for t in testpaths)


def test_handout_uv_run_does_not_compile_the_environment_each_time(handout):
    assert "compile-bytecode" not in tomllib.loads((handout / "pyproject.toml").read_text())["tool"]["uv"]


def test_handout_pyproject_and_lock_agree(handout):
    done = subprocess.run(["uv", "lock", "--check", "--offline"], cwd=handout, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_handout_lock_pins_the_staff_versions(handout):
    def versions(lock: Path) -> dict[str, str]:
        return {p["name"]: p.get("version") for p in tomllib.loads(lock.read_text())["package"]}

    ours, staff = versions(handout / "uv.lock"), versions(REPO / "uv.lock")
    assert "torch" in ours and {k: v for k, v in ours.items() if staff.get(k) != v} == {}


def test_handout_dev_group_has_only_what_the_shipped_tests_need(handout):
    pyproject = tomllib.loads((handout / "pyproject.toml").read_text())
    staff = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == staff["project"]["dependencies"]
    used = H._imported_modules(sorted((handout / "tests").glob("*.py"))) | H.ALWAYS_DEV
    dev = {H._req_name(r) for r in pyproject["dependency-groups"]["dev"]}
    assert dev == {H._req_name(r) for r in staff["dependency-groups"]["dev"]} & (used - H.STAFF_ONLY_DEV)
    assert not dev & H.STAFF_ONLY_DEV
    assert set(pyproject["dependency-groups"]) == {"dev"}


def test_handout_cli_offers_the_student_commands(handout):
    code = "from cs336_basics.cli import main; main(['--help'])"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=handout,
        env=dict(os.environ, PYTHONPATH=str(handout)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "{status,submit,generate,train,sweep,compare,evaluate,account,tokenizer-stats}" in done.stdout
    scripts = tomllib.loads((handout / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"cs336": "cs336_basics.cli:main"}


def test_handout_refuses_a_non_empty_out_dir(tmp_path):
    (tmp_path / "keep.txt").write_text("")
    with pytest.raises(FileExistsError, match="out_dir must be empty or absent"):
        H.build_handout(tmp_path, lock=False)


@pytest.mark.parametrize(
    "source, message",
    [
        ("def f():\n    # BEGIN SOLUTION\n    return 1\n", r"f\.py:2: # BEGIN SOLUTION without an # END SOLUTION"),
        ("def f():\n    return 1\n    # END SOLUTION\n", r"f\.py:3: # END SOLUTION without a # BEGIN SOLUTION"),
        ("# BEGIN SOLUTION\nX = 1\n# END SOLUTION\n", r"f\.py:1: solution region outside any function"),
    ],
    ids=["unclosed", "unopened", "module_level"],
)
def test_handout_solution_regions_reject_bad_markers(tmp_path, source, message):
    (tmp_path / "f.py").write_text(source)
    with pytest.raises(ValueError, match=message):
        H.solution_regions(tmp_path / "f.py")


def test_handout_stub_keeps_indentation_and_names_the_def(tmp_path):
    (tmp_path / "f.py").write_text(
        'class A:\n    """Does a thing. More."""\n\n    def go(self):\n        x = 1\n'
        "        # BEGIN SOLUTION\n        return x\n        # END SOLUTION\n"
    )
    assert H.stub_text(tmp_path / "f.py").splitlines()[-1] == (
        '        raise NotImplementedError("Implement A.go: Does a thing; see README.md")'
    )


def _skipped_then_passed(handout: Path, tmp_path: Path, keyword: str, skip_message: str) -> None:
    """`pytest -k keyword` selects tests, each skipped on the handout with `skip_message` in the log,
    and passed on the handout with the solutions restored (both run at once)."""
    restored = tmp_path / "restored"
    shutil.copytree(handout, restored)
    H.restore_solutions(restored, REPO)
    (tmp_path / "handout_probe.py").write_text(PROBE)
    procs = {
        name: _pytest(root, tmp_path, name, "-k", keyword, "-rs")
        for name, root in (("stub_run", handout), ("restored_run", restored))
    }
    logs = {name: (p.wait(), (tmp_path / f"{name}.log").read_text()) for name, p in procs.items()}
    stub = _results(tmp_path / "stub_run.xml", handout)
    skipped = [o for o, _ in stub.values()]
    assert logs["stub_run"][0] == 0 and skipped and set(skipped) == {"skipped"}, logs["stub_run"][1][-2000:]
    assert skip_message in logs["stub_run"][1], logs["stub_run"][1][-2000:]
    done = _results(tmp_path / "restored_run.xml", restored)
    assert [o for o, _ in done.values()] == ["passed"] * len(skipped), logs["restored_run"][1][-2000:]


@pytest.mark.smollm2  # loads SmolLM2 in a subprocess; run in the staff suite and with -k smollm2
@pytest.mark.slow  # second tier
def test_handout_smollm2_answers_paris_like_the_reference_and_skips_until_every_component_works(handout, tmp_path):
    _skipped_then_passed(handout, tmp_path, "smollm2_answers", "not implemented")


def test_handout_short_training_run_skips_until_every_component_works_and_passes_restored(runs):
    """tests/test_train.py on the handout: skipped, naming the first function still to write (the
    loop is given; train_bpe is the first component it calls); with the solutions restored, passed."""
    stub = {n: r for n, r in runs["stub_results"].items() if TRAINING_RUN in n}
    assert [o for o, _ in stub.values()] == ["skipped"], stub
    assert "not implemented yet: Implement train_bpe" in runs["stub"][1], runs["stub"][1][-2000:]
    assert [r for n, r in runs["restored_results"].items() if TRAINING_RUN in n] == [("passed", "")]


def test_handout_ablations_train_once_written_and_skip_before(runs):
    """The four ablations' training tests (tests/test_train.py) on the handout: skipped until every
    component is written; with the solutions restored (the block's and the LM's ablations in
    them), each trains."""
    stub = {n: r for n, r in runs["stub_results"].items() if ABLATIONS in n}
    assert len(stub) == 4 and {o for o, _ in stub.values()} == {"skipped"}, stub
    done = {n: r for n, r in runs["restored_results"].items() if ABLATIONS in n}
    assert len(done) == 4 and {o for o, _ in done.values()} == {"passed"}, done
