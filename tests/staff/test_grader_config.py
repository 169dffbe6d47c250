"""grading.toml as the grader reads it (cs336_basics/staff/grader/config.py): a component's CPU
limit of its own, and every other component's the shared one; every limit written there alone,
a course's own config taking those it does not set from it; the points from cs336_basics.POINTS
alone, `cs336 grade -k` grading some components with theirs."""

import argparse
from dataclasses import MISSING, fields, replace

import pytest

from cs336_basics import POINTS
from cs336_basics.staff.grader import config as config_module
from cs336_basics.staff.grader.cli import _config, add_commands
from cs336_basics.staff.grader.config import DEFAULT_CONFIG, Limits, load_config


def test_grader_config_component_cpu_limit_of_its_own(tmp_path):
    path = tmp_path / "grading.toml"
    path.write_text("[limits]\ncpu_per_component_s = 7\n[limits.cpu_s_for]\nb = 30\n")
    limits = load_config(path).limits
    assert (limits.cpu_s("a"), limits.cpu_s("b")) == (7, 30)


def test_grader_config_unknown_limit_is_named(tmp_path):
    path = tmp_path / "grading.toml"
    path.write_text("[limits]\ncpu_s = 7\n")
    with pytest.raises(ValueError, match="unknown limits \\['cpu_s'\\]"):
        load_config(path)


def test_grader_config_limits_are_written_in_grading_toml_alone():
    # no default in the code: a limit is one line of grading.toml, with the measurement behind it
    defaults = [f.name for f in fields(Limits) if f.default is not MISSING and f.name != "cpu_s_for"]
    assert defaults == []


def test_grader_config_a_course_s_config_takes_the_limits_it_does_not_set_from_grading_toml(tmp_path):
    path = tmp_path / "grading.toml"
    path.write_text("[limits]\nmemory_mb = 5000\n")
    limits, shipped = load_config(path).limits, load_config().limits
    assert limits == replace(shipped, memory_mb=5000)


def test_grader_config_grading_toml_without_a_limit_names_it(tmp_path, monkeypatch):
    shipped = DEFAULT_CONFIG.read_text()
    path = tmp_path / "grading.toml"
    path.write_text(shipped.replace("\nopen_files = ", "\n# open_files = "))
    monkeypatch.setattr(config_module, "DEFAULT_CONFIG", path)
    with pytest.raises(ValueError, match="lacks \\['open_files'\\]"):
        load_config(path)


def test_grader_config_points_are_the_package_s_and_a_points_section_is_refused(tmp_path):
    path = tmp_path / "grading.toml"
    path.write_text("[points]\nsilu = 1000\n[limits]\nmemory_mb = 5000\n")
    with pytest.raises(ValueError, match="unknown sections \\['points'\\]; expected \\[limits\\] only"):
        load_config(path)
    assert load_config().points == POINTS


def test_grader_config_dash_k_grades_only_those_components_with_their_points(tmp_path):
    (tmp_path / "submission.zip").write_bytes(b"PK")
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers())
    args = parser.parse_args(["grade", str(tmp_path), "-k", "rope", "-k", "silu"])
    config = _config(args)
    assert config.points == {"rope": POINTS["rope"], "silu": POINTS["silu"]}
    assert config.components == ["silu", "rope"]  # COMPONENTS' order
    assert _config(parser.parse_args(["grade", str(tmp_path)])).points == POINTS
