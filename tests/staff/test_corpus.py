"""The stored corpus (cs336_basics/corpus/): what read_split returns agrees with the manifest, and
the reference model on the pinned SmolLM2 weights regenerates the first steps of its first batch."""

import hashlib
import subprocess
import sys

import pytest

from cs336_basics.corpus import EOT, SPLITS, manifest, read_split, read_stories
from cs336_basics.staff import corpus_make


@pytest.mark.parametrize("split", SPLITS)
def test_corpus_split_matches_its_manifest_entry(split):
    text, entry = read_split(split), manifest()["splits"][split]
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == entry["text_sha256"]
    assert text.endswith(EOT) and text.count(EOT) == entry["stories"] > 0
    assert len(text) == entry["characters"]


@pytest.mark.parametrize("split", SPLITS)
def test_corpus_stories_pass_the_clean_rule(split):
    for story in read_stories(split):
        assert corpus_make.clean(story) == story and EOT not in story


def test_corpus_stories_are_not_repeated():
    stories = read_stories("train") + read_stories("valid")
    assert len(set(stories)) == len(stories)


def test_corpus_rejects_an_unknown_split():
    with pytest.raises(ValueError, match=r"split must be one of \('train', 'valid'\), got 'test'"):
        read_split("test")


@pytest.mark.slow  # second tier: SmolLM2 generates the first batch again
def test_corpus_first_batch_is_sampled_again_from_the_seed():
    """The first CHECK_TOKENS new tokens of every story of batch 0, sampled again (the full
    `cs336 corpus --check` regenerates whole stories). In a process of its own: the generation's
    memory (GBs the allocator keeps) and its thread count would stay with the test session, and
    every process a later test forks would copy that memory's page tables."""
    code = "from cs336_basics.staff import corpus_make; print(*corpus_make.check_first_batch(), sep='\\n')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip() == ""


def test_corpus_work_directory_yields_batches_up_to_the_first_missing_one(tmp_path):
    for batch in (0, 1, 3):
        corpus_make.batch_file(tmp_path, batch).write_text(f'{{"index": {batch}}}\n')
    assert [r["index"] for r in corpus_make.read_work(tmp_path)] == [0, 1]


def test_corpus_batch_is_claimed_once_while_its_claimer_lives(tmp_path):
    assert corpus_make.claim(tmp_path, 5)
    assert not corpus_make.claim(tmp_path, 5)  # this process holds it


def test_corpus_batch_claimed_by_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    corpus_make.batch_file(tmp_path, 2, "claim").write_text(dead.stdout.strip())
    assert corpus_make.claim(tmp_path, 2)


def test_corpus_finished_batch_is_not_claimed(tmp_path):
    corpus_make.batch_file(tmp_path, 0).write_text('{"index": 0}\n')
    assert not corpus_make.claim(tmp_path, 0)
