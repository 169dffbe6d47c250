"""The graded cases: every public fixture case named in a `TOL` dict of tests/test_<component>.py,
with that tolerance, and every hidden case of cs336_basics/staff/hidden_cases.py, with its own.

The TOL dicts are read from the grader's own copy of the tests (never the student's), by
parsing the file and evaluating only the dict's expression with `tolerance` and `torch` in
scope, so the test modules (and pytest) are not imported.
"""

import ast
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from cs336_basics.fixture_io import FIXTURES_DIR
from cs336_basics.staff.hidden_cases import HIDDEN_FIXTURES_DIR, hidden_tolerances
from cs336_basics.testing import tolerance

REPO = FIXTURES_DIR.parent
TESTS_DIR = REPO / "tests"
ADAPTERS = TESTS_DIR / "adapters.py"
_AST_LOCK = threading.Lock()


@dataclass(frozen=True)
class GradedCase:
    name: str
    component: str
    hidden: bool
    tol: float
    path: Path  # the fixture file

    @property
    def title(self) -> str:
        """The test's name in results.json and on the console."""
        return f"{self.component}: {self.name} ({'hidden' if self.hidden else 'public'})"


def public_tolerances(component: str, tests_dir: Path = TESTS_DIR) -> dict[str, float]:
    """The `TOL = {...}` dict of tests/test_<component>.py, evaluated without importing the file."""
    path = Path(tests_dir) / f"test_{component}.py"
    if not path.exists():
        raise FileNotFoundError(f"no public tests for component {component!r}: {path} is missing")
    with _AST_LOCK:  # CPython 3.11's ast.parse and compile are not thread-safe (grade-all uses threads)
        tree = ast.parse(path.read_text(), filename=str(path))
        found = [node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "TOL" for t in node.targets)]
        code = compile(ast.Expression(found[0]), str(path), "eval") if found else None
    if code is not None:
        table = eval(code, {"__builtins__": {}, "tolerance": tolerance, "torch": torch})  # a staff file
        return {str(k): float(v) for k, v in table.items()}
    raise ValueError(f"{path} has no top-level `TOL = {{case: tolerance}}` dict")


def graded_cases(components: list[str], tests_dir: Path = TESTS_DIR, hidden_dir: Path = HIDDEN_FIXTURES_DIR,
                 public_dir: Path = FIXTURES_DIR) -> list[GradedCase]:
    """Per component in the given order: its public cases, then its hidden ones. A case without
    its fixture file raises FileNotFoundError (regenerate with `uv run cs336 fixtures`)."""
    cases = []
    for component in components:
        for hidden, directory, table in (
            (False, public_dir, public_tolerances(component, tests_dir)),
            (True, hidden_dir, hidden_tolerances(component)),
        ):
            for name, tol in table.items():
                path = Path(directory) / f"{name}.safetensors"
                if not path.exists():
                    raise FileNotFoundError(f"fixture {path} of case {name!r} is missing; run `uv run cs336 fixtures`")
                cases.append(GradedCase(name, component, hidden, tol, path))
    if not cases:
        raise ValueError(f"no graded cases for components {components}")
    return cases
