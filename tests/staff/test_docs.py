"""The READMEs and docs/ say what the code knows: every number or list in them that the code can compute
(points, counts, the files students write, the commands a shipped file names, the paths in a
Layout block, the hostile samples) is checked here against the code, so a doc cannot go stale
in silence. Each failure says what to write instead."""

import contextlib
import io
import re
from fnmatch import fnmatch

import pytest

from cs336_basics import COMPONENTS, POINTS, REPO, cli, submit
from cs336_basics.staff import handout as H
from cs336_basics.staff.cases import MISTAKES
from cs336_basics.staff.commands import add_commands

README = REPO / "README.md"
HANDOUT_README = REPO / "handout" / "README.md"
STAFF_README = REPO / "tests" / "staff" / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))  # the staff's pages the README links
STAFF_DOCS = [README, STAFF_README, *DOCS]
HOSTILE = REPO / "tests" / "staff" / "hostile"


def _commands(staff: bool) -> set[str]:
    """The subcommands of the handout's `cs336` (staff=False) or the staff's."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["--help"], add_commands if staff else None)
    return set(re.search(r"\{([\w,-]+)\}", out.getvalue()).group(1).split(","))


def _section(text: str, heading: str) -> str:
    """The text under `## heading` up to the next heading of that level."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_docs_full_marks_are_the_points_total():
    total = sum(POINTS.values())
    for doc in (HANDOUT_README, *STAFF_DOCS):
        scores = {int(a) for a, b in re.findall(r"\b(\d+)/(\d+)\b", doc.read_text()) if a == b and int(a) >= 100}
        assert scores <= {total}, (
            f"{doc.relative_to(REPO)} gives full marks as {sorted(scores)}; cs336_basics.POINTS totals {total}"
        )


def test_docs_state_the_number_of_components():
    for doc in (HANDOUT_README, README, *DOCS):
        counts = {int(n) for n in re.findall(r"\b(\d+) (?:graded )?components\b", doc.read_text())}
        assert counts <= {len(COMPONENTS)}, (
            f"{doc.relative_to(REPO)} counts {sorted(counts)} components, not {len(COMPONENTS)}"
        )


def test_docs_mistake_count_is_the_catalogue_s_if_stated():
    # the README names no count (one per new mistake to edit); a count written there must be current
    counts = {int(n) for n in re.findall(r"\b(\d+) (?:catalogued )?mistakes\b", STAFF_README.read_text())}
    assert counts <= {len(MISTAKES)}, (
        f"tests/staff/README.md counts {sorted(counts)} mistakes; the catalogue has {len(MISTAKES)}"
    )


def test_docs_hostile_table_lists_every_sample_folder():
    listed = set(re.findall(r"^\| `(\w+)` \|", (HOSTILE / "README.md").read_text(), re.M))
    folders = {p.name for p in HOSTILE.iterdir() if p.is_dir() and (p / "README.md").is_file()}
    assert listed == folders, {"not in the table": sorted(folders - listed), "no such folder": sorted(listed - folders)}


def test_handout_what_you_write_names_every_file_with_a_solution_region():
    section = _section(HANDOUT_README.read_text(), "What you write, what is given")
    bullets = re.findall(r"^- `(cs336_basics/[^`]+)`", section, re.M)
    written = set(H.all_solution_regions())
    uncovered = sorted(f for f in written if not any(fnmatch(f, b) or f.startswith(b) for b in bullets))
    assert not uncovered, f"files with solution regions missing from 'What you write': {uncovered}"
    empty = [b for b in bullets if not any(fnmatch(f, b) or f.startswith(b) for f in written)]
    assert not empty, f"'What you write' names files with nothing to write: {empty}"


def test_handout_s_size_statement_holds_for_the_finished_package():
    files, _ = submit.package_files(REPO)  # what `cs336 submit` zips of the reference: the finished package
    size = sum((REPO / p).stat().st_size for p in files)
    assert "finished package holds under a third of either" in HANDOUT_README.read_text()
    assert 3 * len(files) < submit.MAX_PACKAGE_FILES and 3 * size < submit.MAX_PACKAGE_BYTES, (len(files), size)


def test_handout_states_train_bpe_s_cpu_limit():
    from cs336_basics.staff.grader.config import load_config

    limit = load_config().limits.cpu_s("train_bpe")
    stated = re.search(
        r"one worker with one CPU and (\d+) s for all the\s+component's cases", HANDOUT_README.read_text()
    )
    assert stated, "handout/README.md no longer states train_bpe's CPU limit"
    assert int(stated[1]) == limit, f"write: {limit:g} s for all the component's cases"


@pytest.mark.parametrize("staff", [False, True], ids=["handout_files", "staff_files"])
def test_docs_name_only_commands_that_exist(staff):
    """Every `cs336 X` in a shipped file is a command of the handout's CLI; in a staff file, of the staff's."""
    commands = _commands(staff)
    if staff:
        files = [*STAFF_DOCS, *REPO.glob("cs336_basics/staff/**/*.py")]
    else:
        files = [HANDOUT_README, *(REPO / p for p in H.shipped_files(REPO) if p.suffix in (".py", ".md"))]
    wrong = {
        f"{f.relative_to(REPO)}: cs336 {name}"
        for f in files
        for name in re.findall(r"\bcs336 ([a-z][\w-]*)", f.read_text())
        if name not in commands
    }
    assert not wrong, f"commands that `cs336 --help` does not offer here: {sorted(wrong)}"


@pytest.mark.parametrize(
    "doc", [README, HANDOUT_README, REPO / "docs" / "layout.md"], ids=["readme", "handout_readme", "layout"]
)
def test_docs_layout_block_names_paths_that_exist(doc):
    block = re.search(r"## Layout\n+```\n(.*?)```", doc.read_text(), re.S)[1]
    root = REPO
    missing = []
    for line in block.splitlines():
        first = line.split()[0] if line.strip() and not line.startswith(" ") else ""
        for path in first.split(","):
            path = path.strip()
            if path and not any(root.glob(path.rstrip("/"))):
                missing.append(path)
    assert not missing, f"{doc.relative_to(REPO)}'s Layout names paths that do not exist: {missing}"


def test_docs_staff_readme_is_read_in_five_minutes():
    # what it is, the commands, the layout by folder and links: the rest is in docs/
    lines = len(README.read_text().splitlines())
    assert lines <= 120, f"README.md has {lines} lines: move what is not an overview into docs/"


def test_docs_readme_links_every_staff_page():
    readme = README.read_text()
    assert [d.name for d in DOCS if f"](docs/{d.name})" not in readme] == []
