"""The similarity report (cs336_basics/staff/similarity.py) on submissions made from the reference
(cs336_basics/staff/copies.py): copies, disguised or not, score at or above THRESHOLD against the
reference; independent solutions of the same kernels score below it against everything; the
handout's given code scores nothing."""

import csv
import itertools
import shutil

import pytest

from cs336_basics.staff import copies
from cs336_basics.staff.grader.similarity import THRESHOLD, compare, given_code, similarity_report, written_code


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    return copies.small_set(tmp_path_factory.mktemp("submissions"))


@pytest.fixture(scope="module")
def scores(small_set, tmp_path_factory):
    """(name, name) -> pair score, both orders."""
    written = {name: written_code(package, given_code()) for name, package in small_set.items()}
    result = compare(written, {}, tmp_path_factory.mktemp("similarity"))
    return {k: p.score for p in result.pairs for k in ((p.first, p.second), (p.second, p.first))}


@pytest.mark.parametrize("copy", copies.COPIES)
def test_similarity_ranks_each_copy_of_the_reference_above_the_threshold(scores, copy):
    assert scores["reference", copy] >= THRESHOLD


@pytest.mark.parametrize("independent", copies.INDEPENDENT)
@pytest.mark.parametrize("other", ["reference", *copies.COPIES, *copies.INDEPENDENT])
def test_similarity_ranks_independent_solutions_below_the_threshold(scores, independent, other):
    if other != independent:
        assert scores[independent, other] < THRESHOLD


@pytest.mark.parametrize("untouched", copies.UNTOUCHED)
def test_similarity_given_code_scores_nothing(small_set, scores, untouched):
    assert written_code(small_set[untouched], given_code()) == ""
    assert all(scores[untouched, other] == 0 for other in small_set if other != untouched)


def test_similarity_given_code_moved_by_a_student_counts_nothing(tmp_path):
    """A handout whose functional.py has its functions in another order adds lines (the diff sees
    moved code), but all of them are given code: copydetect's boilerplate."""
    packages = {name: copies.handout_package(tmp_path / name) for name in ("moved", "copy")}
    for package in packages.values():
        functional = package / "nn" / "functional.py"
        functional.write_text(copies.reordered(functional.read_text()))
    written = {name: written_code(p, given_code()) for name, p in packages.items()}
    assert written["moved"]  # the diff alone would count it
    (pair,) = compare({"moved": written["moved"], "handout": ""}, {}, tmp_path / "out").pairs
    assert pair.score == 0


def _submissions(small_set, names, dest):
    for name in names:
        shutil.copytree(small_set[name].parent, dest / name)
    return dest


def test_similarity_against_finds_a_copy_of_an_earlier_cohort(small_set, tmp_path):
    now = _submissions(small_set, ["renamed_reordered", "variants"], tmp_path / "now")
    before = _submissions(small_set, ["reference", "alternatives"], tmp_path / "before")
    result = similarity_report(now, tmp_path / "out", against=before, echo=lambda _: None)
    assert result.closest["renamed_reordered"].other == "against/reference"
    assert result.closest["renamed_reordered"].score >= THRESHOLD
    assert result.closest.get("variants") is None or result.closest["variants"].score < THRESHOLD
    assert {(p.first, p.second) for p in result.pairs if p.second.startswith("against/")} and not any(
        p.first.startswith("against/") and p.second.startswith("against/") for p in result.pairs
    )  # earlier submissions are not compared with each other


def test_similarity_report_lists_pairs_at_or_above_the_threshold(small_set, tmp_path):
    subs = _submissions(small_set, ["reference", "commented", "alternatives"], tmp_path / "subs")
    result = similarity_report(subs, tmp_path / "out", echo=lambda _: None)
    with open(tmp_path / "out" / "pairs.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["first"], r["second"]) for r in rows] == [("commented", "reference")]
    assert len(result.pairs) == 3
    html = (tmp_path / "out" / "report.html").read_text()
    assert "highlight-red" in html and "commented.py" in html and "reference.py" in html


def test_similarity_reads_a_zipped_submission_as_its_folder(small_set, tmp_path):
    subs = _submissions(small_set, ["reference", "alternatives"], tmp_path / "subs")
    shutil.make_archive(str(subs / "zipped"), "zip", small_set["commented"].parent.parent, "commented")
    result = similarity_report(subs, tmp_path / "out", echo=lambda _: None)
    assert result.closest["zipped.zip"].other == "reference"
    assert result.closest["zipped.zip"].score >= THRESHOLD


def test_similarity_report_shows_submission_names_as_text(small_set, tmp_path):
    subs = _submissions(small_set, ["reference", "exact_copy"], tmp_path / "subs")
    (subs / "exact_copy").rename(subs / "<img src=x onerror=alert(1)>")
    result = similarity_report(subs, tmp_path / "out", echo=lambda _: None)
    assert result.pairs[0].score >= THRESHOLD
    assert "<img src=x" not in (tmp_path / "out" / "report.html").read_text()


def test_similarity_refuses_a_threshold_outside_0_1(small_set, tmp_path):
    subs = _submissions(small_set, ["reference", "variants"], tmp_path / "subs")
    with pytest.raises(ValueError, match=r"threshold must be a fraction in \[0, 1\], got 50"):
        similarity_report(subs, tmp_path / "out", threshold=50, echo=lambda _: None)


def test_similarity_columns_in_the_gradebook(tmp_path):
    from cs336_basics.staff.grader.grade import GradeReport
    from cs336_basics.staff.grader.gradebook import write_gradebook
    from cs336_basics.staff.grader.similarity import Closest

    reports = [GradeReport(name, [], {"linear": 1}) for name in ("alice", "bob", "carol")]
    closest = {"alice": Closest(0.97, "=bob"), "bob": Closest(0.97, "alice")}
    write_gradebook(reports, tmp_path / "gradebook.csv", ["linear"], closest)
    with open(tmp_path / "gradebook.csv") as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    assert [(rows[n]["similarity"], rows[n]["most_similar_to"]) for n in ("alice", "bob", "carol")] == [
        ("0.970", "'=bob"),
        ("0.970", "alice"),
        ("0", ""),
    ]


def test_similarity_pairs_are_each_compared_once(scores, small_set):
    assert set(scores) == {(a, b) for a, b in itertools.permutations(small_set, 2)}


RUN_TWICE = """import sys
from cs336_basics.staff.grader.similarity import similarity_report
result = similarity_report(sys.argv[1], sys.argv[2], echo=lambda _: None)
for p in result.pairs:
    print(p.first, p.second, repr(p.first_in_second), repr(p.second_in_first), p.shared_tokens, p.flagged())
"""


def test_similarity_scores_and_flags_are_the_same_whatever_the_hash_seed(small_set, tmp_path):
    """Two runs on the same submissions in processes with different PYTHONHASHSEED (which salts
    Python's hash(), the one copydetect hashes k-grams with) give the same scores and flagged pairs."""
    import os
    import subprocess
    import sys

    subs = _submissions(small_set, list(small_set), tmp_path / "subs")
    runs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        command = [sys.executable, "-c", RUN_TWICE, str(subs), str(out)]
        env = {**os.environ, "PYTHONHASHSEED": seed}
        printed = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
        runs.append((printed, (out / "pairs.csv").read_text()))
    assert runs[0] == runs[1]
    assert "True" in runs[0][0] and runs[0][1].count("\n") > 1  # some pairs flagged, the same ones


def _tiny(name: str, body: str, dest):
    """A submission whose package is the handout's plus one small file of its own."""
    package = copies.handout_package(dest / name)
    (package / "extra.py").write_text(body)
    return package


TINY = """def add_one(values):
    out = []
    for value in values:
        out.append(value + 1)
    return out
"""


def test_similarity_does_not_flag_a_few_shared_tokens_but_flags_a_copy(small_set, tmp_path):
    from cs336_basics.staff.grader.similarity import MIN_SHARED_TOKENS

    written = {
        "tiny_a": written_code(_tiny("tiny_a", TINY, tmp_path), given_code()),
        "tiny_b": written_code(_tiny("tiny_b", TINY.replace("+ 1", "- 1"), tmp_path), given_code()),
        "reference": written_code(small_set["reference"], given_code()),
        "exact_copy": written_code(small_set["exact_copy"], given_code()),
    }
    pairs = {frozenset((p.first, p.second)): p for p in compare(written, {}, tmp_path / "out").pairs}
    tiny = pairs[frozenset(("tiny_a", "tiny_b"))]
    assert tiny.score >= THRESHOLD and 0 < tiny.shared_tokens < MIN_SHARED_TOKENS  # alike, but too little
    assert not tiny.flagged()
    assert pairs[frozenset(("reference", "exact_copy"))].flagged()


def test_similarity_report_figures_name_the_submissions_and_label_the_axes(small_set, tmp_path):
    from cs336_basics.staff.grader.similarity_html import figures

    written = {name: written_code(small_set[name], given_code()) for name in ("reference", "renamed", "variants")}
    result = compare(written, {}, tmp_path / "out")
    matrix, hist = figures(result, THRESHOLD)
    (ax,) = [a for a in matrix.axes if a.get_title()]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(written)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(written)
    assert ax.get_xlabel() and ax.get_ylabel()
    (h,) = hist.axes
    assert h.get_xlabel() and h.get_ylabel() and h.get_title()
