"""train_bpe: byte-level BPE training. The snapshot tests compare the merges and vocabulary
(cs336_basics/tokenizer/tensors.py, bpe_table) with stored ones, which are what an obviously
correct trainer that recounts every pair before every merge (tests/oracles.py) gives on the
stored corpora (the course staff check that, so these tests need not run it); the others
check the conventions one at a time."""

import numpy as np
import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.tokenizer.synthetic import synthetic_text
from cs336_basics.tokenizer.tensors import merges_from_table, tensor_to_text

from .adapters import run_train_bpe, run_train_bpe_on_text

EOT = "<|endoftext|>"


def first_difference(got: list, expected: list) -> str:
    for k, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            return f"merge {k}: got {g!r}, expected {e!r}"
    return f"got {len(got)} merges, expected {len(expected)}"


def merges_difference(fx, tmp_path) -> str:
    """Where run_train_bpe's merges on the fixture's corpus first differ from the stored ones, in bytes."""
    specials = fx.kwargs["special_tokens"]
    path = tmp_path / "corpus.txt"
    path.write_text(tensor_to_text(fx.kwargs["corpus"]), encoding="utf-8")
    vocab, merges = run_train_bpe(path, fx.kwargs["vocab_size"], specials)
    assert isinstance(vocab, dict) and isinstance(merges, list), "run_train_bpe returns (vocab dict, merges list)"
    expected = merges_from_table(fx.expected.long(), specials)
    if merges == expected:
        return "the merges are the stored ones, the vocabulary is not"
    return first_difference(merges, expected)


@pytest.mark.parametrize("case", fixture_names("train_bpe"))
def test_train_bpe_matches_fixture(case, snapshot, tmp_path):
    fx = snapshot.load(case)
    actual = run_train_bpe_on_text(**fx.kwargs)
    if not torch.equal(actual, fx.expected.long()):  # the first merge that differs, in bytes, first
        print(f"{case}: {merges_difference(fx, tmp_path)}")
    snapshot.check(actual, fx)


def train(tmp_path, text: str, vocab_size: int, special_tokens: list[str], **kwargs):
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    return run_train_bpe(path, vocab_size, special_tokens, **kwargs)


def synthetic(seed: int, docs: int, special_tokens: list[str], **kw) -> str:
    return synthetic_text(np.random.default_rng(seed), docs, special_tokens, **kw)


def test_train_bpe_in_several_processes_equals_one_process(tmp_path):
    text = synthetic(3, 400, [EOT])
    one = train(tmp_path, text, 450, [EOT], num_processes=1)
    assert train(tmp_path, text, 450, [EOT], num_processes=2) == one


def test_train_bpe_vocabulary_holds_the_bytes_the_specials_and_one_token_per_merge(tmp_path):
    vocab, merges = train(tmp_path, "low lower lowest" * 50 + EOT + "newer wider", 270, [EOT])
    assert len(vocab) == 270 and len(merges) == 270 - 256 - 1
    assert {bytes([b]) for b in range(256)} | {EOT.encode()} <= set(vocab.values())
    assert [a + b for a, b in merges] == [t for t in vocab.values() if len(t) > 1 and t != EOT.encode()]


def test_train_bpe_never_merges_across_a_special_token(tmp_path):
    # "ab" occurs only across the special token: no merge may make it
    vocab, merges = train(tmp_path, f"a{EOT}b " * 30 + "xy xy", 260, [EOT])
    assert (b"a", b"b") not in merges and b"ab" not in vocab.values()


def test_train_bpe_does_not_count_special_tokens_as_text(tmp_path):
    vocab, merges = train(tmp_path, f"{EOT}" * 40 + "hi hi", 258, [EOT])
    assert merges == [(b"h", b"i")]


def test_train_bpe_breaks_ties_by_the_greater_pair(tmp_path):
    # ("a","b") and ("c","d") both occur 3 times: ("c","d") is lexicographically greater
    vocab, merges = train(tmp_path, "ab ab ab cd cd cd", 257, [])
    assert merges == [(b"c", b"d")]


def test_train_bpe_counts_pairs_within_pre_tokens_only(tmp_path):
    # " b" is one pre-token (a space joins the word after it): ("a", " ") never occurs as a pair
    vocab, merges = train(tmp_path, "a b a b a b", 258, [])
    assert merges == [(b" ", b"b"), (b" ", b"a")]  # across pre-tokens, ("a", " ") would tie first


def test_train_bpe_stops_when_no_pair_is_left(tmp_path):
    vocab, merges = train(tmp_path, "ab", 300, [])
    assert merges == [(b"a", b"b")] and len(vocab) == 257


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(vocab_size=100), "vocab_size must be at least 256"),
        (dict(vocab_size=300.0), "vocab_size must be an int"),
        (dict(special_tokens="<|endoftext|>"), "special_tokens must be a list"),
        (dict(special_tokens=[EOT, EOT]), "must not repeat"),
    ],
)
def test_train_bpe_rejects_bad_arguments_by_name(tmp_path, bad, message):
    path = tmp_path / "corpus.txt"
    path.write_text("hello")
    kwargs = dict(input_path=path, vocab_size=300, special_tokens=[EOT]) | bad
    with pytest.raises((ValueError, TypeError), match=message):
        run_train_bpe(**kwargs)


def test_train_bpe_rejects_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="input_path"):
        run_train_bpe(tmp_path / "missing.txt", 300, [EOT])
