"""The public snapshot tests apply the grader's rule (cs336_basics/builtin_guard.py): a component
that calls the PyTorch built-in computing it fails its snapshot test, with a message naming it."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
USES_BUILTIN = """
def pytest_sessionstart(session):  # after jaxtyping's import hook is in place
    import torch.nn.functional as TF
    from cs336_basics.nn import functional as F

    F.silu = lambda x: TF.silu(x)  # right values, from the built-in
"""


def test_public_snapshot_test_fails_a_component_that_calls_its_builtin(tmp_path):
    (tmp_path / "uses_builtin.py").write_text(USES_BUILTIN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "uses_builtin",
                           "tests/test_silu.py", "-k", "matches_fixture"], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout[-2000:]
    assert "silu called F.silu: the PyTorch built-in that computes this component" in done.stdout
    summary = done.stdout.splitlines()[-1]
    assert "failed" in summary and "error" not in summary, summary  # a failure of the test, not a teardown error
    assert "mismatch" not in done.stdout and "off by more than" not in done.stdout  # the values are right
