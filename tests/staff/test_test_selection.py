"""`uv run pytest -k <component>` selects that component's tests and no other's.

pytest's -k matches a substring of any name on the test's path (file, test, parameter id), so a
test id naming another component (`test_parallel_lm_...`, a mistake id `attention-mask_after_softmax`)
runs under that component too. Checked over COMPONENTS, whatever components are added.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from cs336_basics import COMPONENTS, REPO


def _selected_by(tmp_path: Path) -> dict[str, list[str]]:
    out = tmp_path / "keywords.json"
    env = dict(os.environ, KEYWORDS_OUT=str(out))
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "tests.staff._component_keywords"], cwd=REPO, env=env, capture_output=True, text=True)  # fmt: skip
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def _nested_in(component: str) -> set[str]:
    """The other components whose names are substrings of this one's ("block" in "ffn_block"):
    their -k cannot help selecting it."""
    return {c for c in COMPONENTS if c != component and c in component}


def test_no_test_id_names_two_components(tmp_path):
    selected_by = _selected_by(tmp_path)
    assert len(selected_by) > 100
    wrong = {}
    for nodeid, components in selected_by.items():
        own = max(components, key=len, default="")  # the longest name a test carries is its component
        if own and set(components) - {own} - _nested_in(own):
            wrong[nodeid] = components
    assert wrong == {}, "test ids that `-k` selects for more than one component: " + json.dumps(wrong, indent=1)
