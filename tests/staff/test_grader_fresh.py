"""Staff only: the grader's fresh draws of public cases (grader/fresh.py) reject the trivial answer
(zeros) whenever the stored fixture does: a model whose logits are all equal generates token 0
each time, and a small random reference model sometimes generates only 0s too."""

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.grader import fresh

STORED = load_fixture("generate_until_context_full")  # four generated ids, not all 0


def zeros_for_any_draw(adapter, args):
    return torch.zeros(4, dtype=torch.float64)


def test_grader_fresh_draw_is_kept_when_zeros_fail_it():
    assert not fresh._passes_zeros(STORED.expected, STORED)
    drawn = fresh.fresh_fixture(STORED, seed=1)
    assert drawn is not None and not fresh._passes_zeros(drawn.expected, drawn)


def test_grader_fresh_draw_that_zeros_pass_is_drawn_again(monkeypatch):
    monkeypatch.setattr(fresh, "expected_output", zeros_for_any_draw)
    assert fresh.fresh_fixture(STORED, seed=1) is None


def test_grader_fresh_draw_that_zeros_pass_is_kept_when_they_pass_the_stored_fixture(monkeypatch):
    zeros = fresh.Fixture(**{**vars(STORED), "expected": torch.zeros_like(STORED.expected)})
    monkeypatch.setattr(fresh, "expected_output", zeros_for_any_draw)
    monkeypatch.setattr(fresh, "compare", lambda *a, **k: type("Ok", (), {"ok": True})())
    assert fresh.fresh_fixture(zeros, seed=1) is not None


def test_grader_fresh_draws_of_every_public_case_reject_zeros_where_the_stored_fixture_does():
    from cs336_basics.staff.cases import PUBLIC_CASES

    for case in PUBLIC_CASES:
        stored = load_fixture(case.name)
        drawn = fresh.fresh_fixture(stored, seed=20261126)
        if drawn is not None and not fresh._passes_zeros(stored.expected, stored):
            assert not fresh._passes_zeros(drawn.expected, drawn), case.name
