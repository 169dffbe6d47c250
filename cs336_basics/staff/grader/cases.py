"""The graded cases: every public and hidden case of the registry (cs336_basics/staff/cases/)
for the graded components, each with the tolerance stored in its fixture file."""

from dataclasses import dataclass
from pathlib import Path

from cs336_basics.fixture_io import FIXTURES_DIR, fixture_names
from cs336_basics.staff.cases import HIDDEN_FIXTURES_DIR, cases_of
from cs336_basics.staff.grader.fixtures import load_fixture


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


def graded_cases(
    components: list[str], public_dir: Path = FIXTURES_DIR, hidden_dir: Path = HIDDEN_FIXTURES_DIR
) -> list[GradedCase]:
    """Per component in the given order: its public cases, then its hidden ones. A case without
    its fixture file, or a fixture file without a case, raises (run `uv run cs336 fixtures`)."""
    graded = []
    for component in components:
        for hidden, directory in ((False, Path(public_dir)), (True, Path(hidden_dir))):
            declared = [c.name for c in cases_of(component, hidden)]
            stored = fixture_names(component, directory)
            if sorted(declared) != sorted(stored):
                raise FileNotFoundError(
                    f"{component}: the {'hidden' if hidden else 'public'} cases {declared} and the "
                    f"files in {directory} {stored} differ; run `uv run cs336 fixtures`"
                )
            for name in declared:
                path = directory / f"{name}.safetensors"
                graded.append(GradedCase(name, component, hidden, load_fixture(path).tol, path))
    if not graded:
        raise ValueError(f"no graded cases for components {components}")
    return graded
