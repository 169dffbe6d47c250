"""A hidden test's failure message explains the mismatch without giving away an expected value."""

import torch

from cs336_basics.testing import compare

EXPECTED = torch.tensor([0.5, -1.2345678, 2.0])
ACTUAL = torch.tensor([0.5, 7.654321, 2.0])


def test_hidden_failure_message_withholds_expected_values():
    message = compare(ACTUAL, EXPECTED, tol=1e-6, reveal_values=False).message
    assert "1 of 3 elements" in message and "max scaled error" in message
    assert "-1.23457" not in message and "7.65432" not in message and "index" not in message
    assert "abs error" not in message and "8.889" not in message


def test_public_failure_message_shows_the_worst_element():
    message = compare(ACTUAL, EXPECTED, tol=1e-6).message
    assert "worst at index (1,): got 7.65432, expected -1.23457" in message
