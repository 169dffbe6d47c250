"""Staff only: `cs336 train` encodes its corpus in one process per core (cs336_basics/train/tokens.py),
cutting the text where a document starts, and gets the ids one process gets."""

import numpy as np
import pytest

from cs336_basics.corpus import EOT
from cs336_basics.tokenizer.tokenizer import Tokenizer
from cs336_basics.tokenizer.train_bpe import train_bpe
from cs336_basics.train.tokens import document_chunks, encode_text
from cs336_basics.train.toy_stories import toy_stories


@pytest.fixture(scope="module")
def stories(tmp_path_factory) -> tuple[Tokenizer, str]:
    """A 300-token BPE tokenizer and the 120 template stories it was trained on."""
    text = toy_stories(np.random.default_rng(0), 120)
    path = tmp_path_factory.mktemp("stories") / "stories.txt"
    path.write_text(text, encoding="utf-8")
    return Tokenizer(*train_bpe(path, 300, [EOT]), [EOT]), text


@pytest.mark.parametrize("num_chunks", [2, 3, 7, 500])
def test_document_chunks_join_to_the_text_and_each_inner_one_starts_a_document(stories, num_chunks):
    _, text = stories
    chunks = document_chunks(text, num_chunks)
    assert "".join(chunks) == text
    assert 1 < len(chunks) <= num_chunks
    assert all(chunk.startswith(EOT) for chunk in chunks[1:])


def test_document_chunks_of_a_text_without_documents_is_the_text():
    assert document_chunks("no story boundary here", 4) == ["no story boundary here"]


@pytest.mark.parametrize("num_processes", [2, 3])
def test_encoding_in_processes_gives_the_one_process_ids(stories, num_processes):
    tokenizer, text = stories
    text = "a first line without a boundary\n" + text + "and a tail after the last one"
    expected = np.array(tokenizer.encode(text), dtype=np.uint16)
    got = encode_text(tokenizer, text, num_processes)
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, expected)
