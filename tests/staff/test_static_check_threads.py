"""grade_all grades submissions in threads of one process, so the static check (grader/
static_check.py) and the source rule (source_rule.py) parse sources in several threads at once,
while the collector runs finalizers in them: on CPython 3.11 a parse that runs while another
builds its tree can fail with "AST constructor recursion depth mismatch" (python/cpython#106905),
and a submission's review was then empty, or its source rule did not run."""

import ast
import gc
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


class _ParsesInTheMiddleOfAParse:
    """A cycle whose finalizer, once a parse is under way, parses outside source_rule.PARSING (as
    traceback formatting or any library may); until then it leaves a new cycle for the next
    collection, so the collector reaches it inside the parse."""

    parsing = False  # set while the test's ast.parse runs
    raced = False

    def __init__(self):
        self.me = self

    def __del__(self):
        cls = _ParsesInTheMiddleOfAParse
        if cls.raced:
            return
        if cls.parsing:
            cls.raced = True
            _REAL_PARSE("a.b(c)[d]")
        else:
            cls()


_REAL_PARSE = ast.parse


def _parse_noting_it_runs(*args, **kwargs):
    _ParsesInTheMiddleOfAParse.parsing = True
    try:
        return _REAL_PARSE(*args, **kwargs)
    finally:
        _ParsesInTheMiddleOfAParse.parsing = False


def test_parse_survives_a_parse_outside_the_lock_in_the_middle_of_it(monkeypatch):
    expected = ast.dump(ast.parse(SOURCE))
    monkeypatch.setattr(ast, "parse", _parse_noting_it_runs)
    threshold = gc.get_threshold()
    _ParsesInTheMiddleOfAParse()
    gc.set_threshold(1)  # every allocation collects: the cycle's successor dies inside the parse
    try:
        tree = source_rule.parse(SOURCE)
    finally:
        gc.set_threshold(*threshold)
        _ParsesInTheMiddleOfAParse.raced = True  # the last cycle leaves none behind
    assert ast.dump(tree) == expected
