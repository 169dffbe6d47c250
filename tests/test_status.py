"""`cs336 status`: which row a test lands in, and what the table counts."""

import pytest

from cs336_basics.status import component_of, format_table, parse_junit

REPORT = """<testsuites><testsuite>
<testcase classname="tests.test_rmsnorm" name="test_rmsnorm_matches_fixture[rmsnorm_bf16]">
  <properties><property name="fixture" value="rmsnorm_bf16"/><property name="max_abs_err" value="0.015"/>
  <property name="max_scaled_err" value="0.0027"/></properties></testcase>
<testcase classname="tests.test_rmsnorm" name="test_rmsnorm_matches_fixture[rmsnorm]">
  <properties><property name="fixture" value="rmsnorm"/><property name="max_abs_err" value="0.5"/>
  <property name="max_scaled_err" value="0.2"/></properties>
  <failure message="run_rmsnorm on fixture 'rmsnorm': 3 of 768 elements are off&#10;details"/></testcase>
<testcase classname="tests.test_dtypes" name="test_matches_torch_builtin_in_same_dtype[rmsnorm-float32]">
  <properties><property name="max_scaled_err" value="9.0"/></properties></testcase>
<testcase classname="tests.test_ffn_width" name="test_ffn_width_keeps_exact_multiples"/>
</testsuite></testsuites>"""


@pytest.mark.parametrize(
    "classname, name, row",
    [
        ("tests.test_bad_input", "test_bad_input_raises_clear_error[swiglu-d_ff_zero]", "swiglu"),
        ("tests.test_dtypes", "test_output_dtype_is_input_dtype[positionwise_ffn-float16]", "positionwise_ffn"),
        ("tests.test_ffn_width", "test_ffn_width_keeps_exact_multiples", "tests/test_ffn_width.py"),
    ],
    ids=["parameter", "longest_name", "file"],
)
def test_status_row_is_the_component_named_in_the_test_else_its_file(classname, name, row):
    assert component_of(classname, name) == row


def test_status_counts_tests_and_takes_errors_from_snapshot_tests_only(tmp_path):
    path = tmp_path / "report.xml"
    path.write_text(REPORT)
    table = parse_junit(path)
    row = table["rmsnorm"]
    assert (row.passed, row.failed) == (2, 1)
    assert (row.max_abs_err, row.max_scaled_err) == (0.5, 0.2)  # not the 9.0 measured against a built-in
    assert (
        row.first_failure
        == "test_rmsnorm_matches_fixture[rmsnorm]: run_rmsnorm on fixture 'rmsnorm': 3 of 768 elements are off\ndetails"
    )
    assert table["tests/test_ffn_width.py"].passed == 1
    assert "rmsnorm" in format_table(table) and " 2/3 " in format_table(table)


def test_status_shows_each_failing_component_s_first_failure_whole(tmp_path):
    path = tmp_path / "report.xml"
    path.write_text(REPORT)
    text = format_table(parse_junit(path))
    assert (
        "rmsnorm: first failure\n    test_rmsnorm_matches_fixture[rmsnorm]: run_rmsnorm on fixture 'rmsnorm': 3 of 768 "
        "elements are off\n    details" in text
    )
