"""The stored corpus (cs336_basics/corpus/): what read_split returns agrees with the manifest, and
the reference model on the pinned SmolLM2 weights regenerates the first steps of its first batch."""

import hashlib

import pytest

from cs336_basics.corpus import EOT, SPLITS, manifest, read_split, read_stories
from cs336_basics.corpus import make as corpus_make


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


def test_corpus_first_batch_is_sampled_again_from_the_seed():
    """The first CHECK_TOKENS new tokens of every story of batch 0, sampled again (the full
    `cs336 corpus --check` regenerates whole stories)."""
    assert corpus_make.check_first_batch() == []
