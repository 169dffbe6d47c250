"""The stored fixture files are what the committed generator makes, on this machine: inputs
exactly as the seeds draw them, expected outputs recomputed from the stored inputs within
HEADROOM x each case's floor (make_fixtures.drift_bound), and the tolerance in each file the
registry's. CI runs this file under ATEN_CPU_CAPABILITY=default and MKL_CBWR=COMPATIBLE as well
(other CPUs' code paths)."""

import shutil

import pytest
import torch

from cs336_basics.fixture_io import load_fixture, save_fixture
from cs336_basics.staff import cases, make_fixtures
from cs336_basics.staff.cases import BY_NAME
from cs336_basics.staff.cases import case as case_module


def test_stored_fixtures_equal_what_the_generator_makes():
    assert make_fixtures.drifted() == [], "fixtures drifted from the generator: run `uv run cs336 fixtures --check`"


def test_no_fixture_file_without_a_case():
    assert make_fixtures.stale_files() == [], "fixture files that no case generates: delete them or add a case"


@pytest.fixture
def tmp_fixtures(tmp_path, monkeypatch):
    """A copy of the public fixtures that the registry reads instead of fixtures/."""
    shutil.copytree(cases.FIXTURES_DIR, tmp_path / "fixtures")
    monkeypatch.setattr(case_module, "FIXTURES_DIR", tmp_path / "fixtures")  # Case.directory reads it
    return tmp_path / "fixtures"


def _tamper(directory, name: str, edit) -> None:
    fx = load_fixture(name, directory)
    edit(fx)
    save_fixture(fx, directory)


def test_drift_check_reports_an_expected_value_moved_by_more_than_its_share_of_the_tolerance(tmp_fixtures):
    case = BY_NAME["swiglu"]
    bound = make_fixtures.drift_bound(case)
    _tamper(tmp_fixtures, "swiglu", lambda fx: fx.expected.view(-1)[7].mul_(1 + 3 * bound))
    assert [p.split(":")[0] for p in make_fixtures.problems(case)] == ["swiglu"]
    assert "expected output moved" in make_fixtures.problems(case)[0]


def test_drift_check_accepts_an_expected_value_moved_within_its_share(tmp_fixtures):
    case = BY_NAME["swiglu"]
    bound = make_fixtures.drift_bound(case)
    _tamper(tmp_fixtures, "swiglu", lambda fx: fx.expected.view(-1)[7].mul_(1 + bound / 4))
    assert make_fixtures.problems(case) == []


def test_drift_check_accepts_a_name_that_goes_where_its_mistake_fails_marginally(tmp_fixtures):
    # on ffn_block_llama, RMSNorm's eps outside the square root errs within drift_bound of the
    # tolerance: MKL's COMPATIBLE branch computes it just under, and names no such mistake there
    case, name = BY_NAME["ffn_block_llama"], "rmsnorm-eps_outside_sqrt"
    mistake = next(m for m in make_fixtures.MISTAKES if m.name == name)
    assert make_fixtures._fails_marginally(case, mistake, load_fixture(case.name, tmp_fixtures))
    _tamper(tmp_fixtures, case.name, lambda fx: fx.mistakes.pop(name))
    assert make_fixtures.problems(case) == []


def test_drift_check_reports_a_name_that_goes_where_its_mistake_fails_clearly(tmp_fixtures):
    case = BY_NAME["ffn_block_llama"]
    _tamper(tmp_fixtures, case.name, lambda fx: fx.mistakes.pop("swiglu-no_gate"))
    assert any("mistake fingerprints" in p for p in make_fixtures.problems(case))


def test_drift_check_reports_a_fingerprint_whose_values_moved(tmp_fixtures):
    case = BY_NAME["swiglu"]
    _tamper(tmp_fixtures, case.name, lambda fx: fx.mistakes["swiglu-no_gate"].value.view(-1)[0].add_(100 * case.tol))
    assert any("mistake fingerprints" in p and "values moved" in p for p in make_fixtures.problems(case))


def test_drift_check_reports_an_input_the_seed_does_not_draw(tmp_fixtures):
    _tamper(tmp_fixtures, "linear", lambda fx: fx.kwargs["in_features"].view(-1)[0].add_(1.0))
    assert any("stored inputs differ" in p for p in make_fixtures.problems(BY_NAME["linear"]))


def test_drift_check_reports_a_tolerance_other_than_the_registry_s(tmp_fixtures):
    def loosen(fx):
        fx.tol *= 2

    _tamper(tmp_fixtures, "linear", loosen)
    assert any("metadata" in p for p in make_fixtures.problems(BY_NAME["linear"]))


# The generator's own behaviour, shown on a few cases: it writes what drifted and only that.
FEW = [BY_NAME[name] for name in ("linear", "silu", "swiglu", "rmsnorm")]


def test_generator_keeps_stored_inputs_and_recomputes_what_drifted(tmp_fixtures):
    _tamper(tmp_fixtures, "linear", lambda fx: fx.kwargs["in_features"].view(-1)[0].add_(1.0))
    _tamper(tmp_fixtures, "silu", lambda fx: fx.expected.view(-1)[0].add_(1.0))
    written = make_fixtures.write_all(FEW)
    assert [p.stem for p in written] == ["linear", "silu"]
    # linear's inputs are the source of truth: kept, and its expected output recomputed from them
    assert [p.split(":")[1].split("(")[0].strip() for p in make_fixtures.problems(BY_NAME["linear"])] == [
        f"stored inputs differ from what seed {BY_NAME['linear'].seed} draws"
    ]
    assert make_fixtures.problems(BY_NAME["silu"]) == []


def test_generator_redraws_inputs_only_when_asked(tmp_fixtures):
    _tamper(tmp_fixtures, "linear", lambda fx: fx.kwargs["in_features"].view(-1)[0].add_(1.0))
    written = make_fixtures.write_all(FEW, redraw={"linear"})
    assert [p.stem for p in written] == ["linear"] and make_fixtures.problems(BY_NAME["linear"]) == []


def test_expected_outputs_are_stored_in_float64():
    assert {load_fixture(c.name, c.directory).expected.dtype for c in cases.CASES} == {torch.float64}
