"""grading.toml as the grader reads it (cs336_basics/staff/grader/config.py): a component's CPU
limit of its own, and every other component's the shared one."""

import pytest

from cs336_basics.staff.grader.config import load_config


def test_grader_config_component_cpu_limit_of_its_own(tmp_path):
    path = tmp_path / "grading.toml"
    path.write_text("[points]\na = 1\nb = 2\n[limits]\ncpu_per_component_s = 7\n[limits.cpu_s_for]\nb = 30\n")
    limits = load_config(path).limits
    assert (limits.cpu_s("a"), limits.cpu_s("b")) == (7, 30)


def test_grader_config_unknown_limit_is_named(tmp_path):
    path = tmp_path / "grading.toml"
    path.write_text("[points]\na = 1\n[limits]\ncpu_s = 7\n")
    with pytest.raises(ValueError, match="unknown limits \\['cpu_s'\\]"):
        load_config(path)
