"""`uv run pytest -k <component>` selects that component's tests and no other's.

pytest's -k matches a substring of any name on the test's path (file, test, parameter id), so a
test id naming another component (`test_parallel_lm_...`, a mistake id `attention-mask_after_softmax`)
runs under that component too. Checked over tests.conftest.SELECTABLE (the components and `train`,
the training run), whatever components are added; tests/conftest.py then keeps, for `-k NAME`,
only the tests whose own name is NAME ("block" is inside "ffn_block", "train" inside "train_bpe").
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cs336_basics import REPO
from tests.conftest import SELECTABLE, holds_no_test_of, own_name


@pytest.fixture(scope="module")
def selected_by(tmp_path_factory) -> dict[str, list[str]]:
    """Every collected test id -> the names whose `-k` would select it by pytest's rule alone."""
    out = tmp_path_factory.mktemp("selection") / "keywords.json"
    env = dict(os.environ, KEYWORDS_OUT=str(out))
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "tests.staff._component_keywords"], cwd=REPO, env=env, capture_output=True, text=True)  # fmt: skip
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def _nested_in(component: str) -> set[str]:
    """The other names that are substrings of this one ("block" in "ffn_block"): pytest's -k
    alone cannot help selecting it."""
    return {c for c in SELECTABLE if c != component and c in component}


def test_no_test_id_names_two_components(selected_by):
    assert len(selected_by) > 100
    wrong = {}
    for nodeid, components in selected_by.items():
        own = max(components, key=len, default="")  # the longest name a test carries is its component
        if own and set(components) - {own} - _nested_in(own):
            wrong[nodeid] = components
    assert wrong == {}, "test ids that `-k` selects for more than one component: " + json.dumps(wrong, indent=1)


def test_k_name_skips_only_files_that_hold_none_of_its_tests(selected_by):
    """Under `-k NAME` the conftest does not import the files holds_no_test_of names: none of
    their tests may be NAME's."""
    file_of = {nodeid: Path(nodeid.split("::")[0]).name for nodeid in selected_by}
    skips = {(file, name) for file in file_of.values() for name in SELECTABLE if holds_no_test_of(file, name)}
    wrongly_skipped = sorted(nodeid for nodeid, file in file_of.items() if (file, own_name(nodeid)) in skips)
    assert len(skips) > len(SELECTABLE), f"almost no file is skipped: {sorted(skips)}"
    assert wrongly_skipped == [], f"tests that `-k` with their own name would not collect: {wrongly_skipped}"


# Files whose ids nest one selectable name in another (the hook's whole job), collected alone.
NESTED_FILES = ["tests/test_block.py", "tests/test_ffn_block.py", "tests/test_train.py", "tests/test_train_bpe.py"]


def _collected(keyword: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-k", keyword,
                           *NESTED_FILES], cwd=REPO, capture_output=True, text=True)  # fmt: skip
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_k_block_selects_no_ffn_block_test():
    selected = _collected("block")
    assert selected and all(own_name(n) == "block" for n in selected), [n for n in selected if own_name(n) != "block"]


def test_k_train_selects_the_training_run_and_no_train_bpe_test():
    selected = _collected("train")
    assert "tests/test_train.py::test_train_short_run_loss_falls_below_the_measured_threshold" in selected
    assert all(own_name(n) == "train" for n in selected), [n for n in selected if own_name(n) != "train"]
