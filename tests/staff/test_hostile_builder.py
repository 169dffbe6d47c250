"""Staff only: the hostile samples' one builder (tests/staff/_hostile.py) on made-up samples: its
layout, its base and its one hook for run-time values."""

from pathlib import Path

import pytest

from tests.staff import _hostile


@pytest.fixture
def samples(tmp_path, monkeypatch) -> Path:
    """A samples directory of its own, and a reference and a handout of one file each."""
    monkeypatch.setattr(_hostile, "SAMPLES_DIR", tmp_path / "hostile")
    for base in ("reference", "handout"):
        (tmp_path / base / "pkg").mkdir(parents=True)
        (tmp_path / base / "pkg" / "f.py").write_text(f"BASE = {base!r}\n")
    return tmp_path


def make_sample(root: Path, name: str, readme: str, files: dict[str, str]) -> None:
    folder = root / "hostile" / name
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(readme)
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def test_hostile_builder_appends_after_overlaying(samples):
    files = {"overlay/pkg/new.py": "NEW = 1\n", "append/pkg/f.py": "LATER = 2\n", "append/pkg/new.py": "MORE = 3\n"}
    make_sample(samples, "s", "# s\n", files)
    root = _hostile.build("s", samples / "reference", samples / "out")
    assert (root / "pkg" / "f.py").read_text() == "BASE = 'reference'\n\n\nLATER = 2\n"
    assert (root / "pkg" / "new.py").read_text() == "NEW = 1\n\n\nMORE = 3\n"


def test_hostile_builder_replaces_each_placeholder_by_the_value_s_literal(samples):
    make_sample(
        samples, "s", "# s\n", {"append/pkg/f.py": "PATH = {{REPO}} + '/x'\nTARGETS = {{TARGETS}}\nN = {{N}}\n"}
    )
    values = {"REPO": "/a'b", "TARGETS": ["/t/1", "/t/2"], "N": 1280, "UNUSED": 0}
    root = _hostile.build("s", samples / "reference", samples / "out", values)
    scope = {}
    exec((root / "pkg" / "f.py").read_text(), scope)
    assert (scope["PATH"], scope["TARGETS"], scope["N"]) == ("/a'b/x", ["/t/1", "/t/2"], 1280)


def test_hostile_builder_names_a_placeholder_without_a_value(samples):
    make_sample(samples, "s", "# s\n", {"append/pkg/f.py": "A = {{REPO}}\nB = {{MEMFD_MB}}\n"})
    with pytest.raises(KeyError, match=r"needs \['MEMFD_MB'\], got \['REPO'\]"):
        _hostile.build("s", samples / "reference", samples / "out", {"REPO": "/r"})


def test_hostile_builder_applies_a_base_handout_sample_to_the_handout(samples):
    make_sample(samples, "stub", "# stub\n\nbase: handout\n", {"append/pkg/f.py": "X = 1\n"})
    with pytest.raises(ValueError, match="sample stub applies to the handout.*got None"):
        _hostile.build("stub", samples / "reference", samples / "out")
    root = _hostile.build("stub", samples / "reference", samples / "out", handout=samples / "handout")
    assert (root / "pkg" / "f.py").read_text().startswith("BASE = 'handout'\n")


def test_hostile_builder_refuses_an_unknown_base(samples):
    make_sample(samples, "odd", "# odd\n\nbase: solution\n", {})
    with pytest.raises(ValueError, match="base must be 'reference' or 'handout', got 'solution'"):
        _hostile.build("odd", samples / "reference", samples / "out")


def test_hostile_builder_every_placeholder_of_test_grader_s_samples_has_a_value(tmp_path):
    """The samples' {{KEY}}s and test_grader.py's sample_values agree (a sample would not build)."""
    from tests.staff import test_grader

    keys = {k for s in test_grader.HOSTILE_SAMPLES for f in _hostile.sample_files(s) for k in f.placeholders()}
    assert keys == set(test_grader.sample_values(tmp_path))
