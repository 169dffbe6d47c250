"""Staff only: the grader's fresh draws of public cases (grader/fresh.py) reject the trivial answer
(zeros) whenever the stored fixture does: a model whose logits are all equal generates token 0
each time, and a small random reference model sometimes generates only 0s too."""

import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.grader import fresh

STORED = load_fixture("generate_until_context_full")  # four generated ids, not all 0


ONLY_ZEROS_SEED = 10008  # the reference generates 0, 0, 0, 0 on this draw


def test_grader_fresh_zeros_fail_the_stored_fixture():
    assert not fresh._passes_zeros(STORED.expected, STORED)


def test_grader_fresh_draw_that_zeros_pass_is_drawn_again():
    inputs = fresh._draw(STORED.name, ONLY_ZEROS_SEED)
    assert not fresh.expected_output("run_generate", inputs).any()
    assert fresh.fresh_fixture(STORED, seed=ONLY_ZEROS_SEED) is None


def test_grader_fresh_draw_that_zeros_fail_is_kept():
    drawn = fresh.fresh_fixture(STORED, seed=ONLY_ZEROS_SEED + 1)
    assert drawn is not None and not fresh._passes_zeros(drawn.expected, drawn)


def test_grader_fresh_draw_that_zeros_pass_is_kept_when_they_pass_the_stored_fixture():
    zeros = fresh.Fixture(**{**vars(STORED), "expected": torch.zeros_like(STORED.expected)})
    assert fresh._passes_zeros(zeros.expected, zeros)
    assert fresh.fresh_fixture(zeros, seed=ONLY_ZEROS_SEED) is not None


def test_grader_fresh_draws_of_every_public_case_reject_zeros_where_the_stored_fixture_does():
    from cs336_basics.staff.cases import PUBLIC_CASES

    for case in PUBLIC_CASES:
        stored = load_fixture(case.name)
        drawn = fresh.fresh_fixture(stored, seed=20261126)
        if drawn is not None and not fresh._passes_zeros(stored.expected, stored):
            assert not fresh._passes_zeros(drawn.expected, drawn), case.name
