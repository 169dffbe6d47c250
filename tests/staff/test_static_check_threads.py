"""grade_all grades submissions in threads of one process, so the static check (grader/
static_check.py) and the source rule (source_rule.py) parse sources in several threads at once,
while the collector runs finalizers in them: on CPython 3.11 before 3.11.8 such concurrent ast.parse calls can fail with "AST
constructor recursion depth mismatch" (python/cpython#106905), and a submission's review was
then empty."""

import threading

import pytest

from cs336_basics import REPO, source_rule
from cs336_basics.staff.grader.static_check import findings_of

SOURCE = (REPO / "cs336_basics" / "nn" / "functional.py").read_text()


class _Finalized:
    """A cycle whose finalizer is Python code: the collector runs it in whichever thread it
    interrupts, and the interpreter may switch threads there."""

    def __init__(self):
        self.me = self

    def __del__(self):
        sum(range(50))


@pytest.mark.parametrize("checker", [findings_of, source_rule.check_source], ids=["static_check", "source_rule"])
def test_checks_give_the_same_findings_in_threads_at_once(checker):
    expected = checker(SOURCE, "cs336_basics/nn/functional.py")
    outcomes = []

    def check():
        for _ in range(100):
            try:
                outcomes.append(checker(SOURCE, "cs336_basics/nn/functional.py") == expected)
            except SystemError as e:
                outcomes.append(e)

    def make_garbage():
        for _ in range(100_000):
            _Finalized()

    checkers = [threading.Thread(target=check) for _ in range(3)]
    garbage = threading.Thread(target=make_garbage)
    for t in (*checkers, garbage):
        t.start()
    for t in (*checkers, garbage):
        t.join()
    assert outcomes == [True] * 300, [o for o in outcomes if o is not True][:3]
