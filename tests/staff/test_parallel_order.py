"""`pytest -k parallel` runs the tensor-parallel tests in the order the handout README builds the
pieces (tests/conftest.py's PARALLEL_PIECES): a student on the linears sees their failures first."""

import os
import re
import subprocess
import sys

from cs336_basics import REPO
from tests.conftest import PARALLEL_PIECES, parallel_piece


def test_parallel_order_of_pieces_is_the_handout_readme_s():
    text = (REPO / "handout" / "README.md").read_text()
    section = text[text.index("### parallel") :]
    section = section[: section.index("\n## ")]
    first = {piece: section.find(f"`{piece}") for piece in PARALLEL_PIECES}
    assert all(pos >= 0 for pos in first.values()), first
    assert sorted(first, key=first.get) == list(PARALLEL_PIECES)


def test_parallel_tests_are_collected_piece_by_piece():
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-k", "parallel", "tests"], cwd=REPO, env=env, capture_output=True, text=True)  # fmt: skip
    ids = [line for line in done.stdout.splitlines() if re.match(r"tests/(staff/)?test_parallel\w*\.py::", line)]
    public = [nodeid for nodeid in ids if "/staff/" not in nodeid]
    assert len(public) > 20, done.stdout[-2000:] + done.stderr[-2000:]
    pieces = [parallel_piece(nodeid) for nodeid in public]
    assert pieces == sorted(pieces), "\n".join(f"{p} {n}" for p, n in zip(pieces, public, strict=True))
    assert set(pieces[:3]) == {0}  # the column-parallel layer first: the snapshot cases, then its layer tests
