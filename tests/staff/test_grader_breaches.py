"""A component whose code breaks the rule in one case scores 0 in all (grade._breaches_cost_all)."""

from pathlib import Path

from cs336_basics.staff.grader.cases import GradedCase
from cs336_basics.staff.grader.grade import Verdict, _breaches_cost_all


def case(name: str, component: str = "embedding", hidden: bool = False) -> GradedCase:
    return GradedCase(name, component, hidden, 0.0, Path(f"{name}.safetensors"))


CASES = [case("forward"), case("init"), case("init_hidden", hidden=True), case("other", component="linear")]
PASSED = {c.name: Verdict(True, "passed") for c in CASES}


def test_a_breach_fails_the_component_s_cases_that_never_ran_the_code():
    verdicts = PASSED | {"forward": Verdict(False, "embedding called F.embedding", breach=True)}
    out = _breaches_cost_all(CASES, verdicts)
    assert not out["init"].passed and not out["init_hidden"].passed
    assert out["forward"] == verdicts["forward"]


def test_a_breach_leaves_other_components_alone():
    verdicts = PASSED | {"forward": Verdict(False, "embedding called F.embedding", breach=True)}
    assert _breaches_cost_all(CASES, verdicts)["other"] == PASSED["other"]


def test_a_public_case_names_the_public_case_that_broke_the_rule():
    verdicts = PASSED | {"forward": Verdict(False, "embedding called F.embedding", breach=True)}
    assert "case 'forward'" in _breaches_cost_all(CASES, verdicts)["init"].message


def test_a_hidden_breach_is_not_named_and_a_hidden_case_says_a_fixed_sentence():
    verdicts = PASSED | {"init_hidden": Verdict(False, "embedding called a built-in", breach=True)}
    out = _breaches_cost_all(CASES, verdicts)
    assert "a hidden case" in out["init"].message and "init_hidden" not in out["init"].message
    hidden = _breaches_cost_all(CASES, PASSED | {"forward": Verdict(False, "x", breach=True)})["init_hidden"]
    assert hidden.message.endswith("broke the rule in another case (see that case)")


def test_a_wrong_output_is_no_breach_and_costs_its_case_only():
    verdicts = PASSED | {"forward": Verdict(False, "wrong output")}
    assert _breaches_cost_all(CASES, verdicts) == verdicts
