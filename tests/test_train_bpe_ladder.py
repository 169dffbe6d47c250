"""train_bpe, rung by rung: what it returns; the vocabulary's layout (the 256 bytes at ids 0-255,
the special tokens right after, one token per merge in merge order, exactly vocab_size of them);
the special tokens (never text, never merged across, matched literally); the pre-token
boundaries; how pairs are counted and ties broken; every merge the most frequent pair of the
corpus as the earlier merges left it (tests/_ladder.py). Tiny corpora, counted by hand."""

import collections
import os
import tempfile

import regex

from ._ladder import climb_failed, rung
from .adapters import run_train_bpe
from .oracles import GPT2_SPLIT, apply_merge

EOT = "<|endoftext|>"
PAD = "<|pad|>"


def train(text: str, vocab_size: int, special_tokens: list[str]):
    """run_train_bpe on `text` written to a file as UTF-8 bytes (a '\\r\\n' stays as it is)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(text.encode("utf-8"))
        return run_train_bpe(path, vocab_size, special_tokens)


def pretoken_counts(text: str, special_tokens: list[str]) -> collections.Counter:
    """{pre-token as a tuple of one-byte tokens: count}: the text split on the specials, then GPT-2's pattern."""
    pieces = regex.split("|".join(regex.escape(s) for s in special_tokens), text) if special_tokens else [text]
    return collections.Counter(
        tuple(bytes([b]) for b in token.encode("utf-8"))
        for piece in pieces
        for token in regex.findall(GPT2_SPLIT, piece)
    )


def pair_counts(words: collections.Counter) -> collections.Counter:
    counts = collections.Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:], strict=False):
            counts[pair] += n
    return counts


SMALL = "low lower lowest newest widest " * 3 + EOT + " new low"


@rung(1)
def test_train_bpe_returns_a_vocab_dict_and_a_merges_list():
    out = train(SMALL, 270, [EOT])
    if not (isinstance(out, tuple) and len(out) == 2):
        climb_failed(f"train_bpe returned {type(out).__name__}", "return the pair (vocab, merges)")
    vocab, merges = out
    if not isinstance(vocab, dict) or not all(isinstance(k, int) and isinstance(v, bytes) for k, v in vocab.items()):
        climb_failed(f"vocab is a {type(vocab).__name__} that does not map int ids to bytes",
                     "vocab: dict[int, bytes], token id -> the token's bytes")  # fmt: skip
    ok = isinstance(merges, list) and all(
        isinstance(m, tuple) and len(m) == 2 and all(isinstance(t, bytes) for t in m) for m in merges
    )
    if not ok:
        climb_failed(f"merges is not a list of pairs of bytes (first item {merges[:1]!r})",
                     "merges: list[tuple[bytes, bytes]], the two tokens' bytes of each merge, in order")  # fmt: skip


@rung(2)
def test_train_bpe_vocab_starts_with_the_256_bytes_at_ids_0_to_255():
    vocab, _ = train(SMALL, 270, [EOT])
    wrong = [i for i in range(256) if vocab.get(i) != bytes([i])]
    if wrong:
        i = wrong[0]
        climb_failed(f"{len(wrong)} of the ids 0-255 are not their own byte (id {i} -> {vocab.get(i)!r})",
                     "start the vocabulary with every byte value b at id b, seen in the corpus or not: "
                     "{b: bytes([b]) for b in range(256)}")  # fmt: skip


@rung(3)
def test_train_bpe_special_tokens_come_right_after_the_bytes_in_the_order_given():
    vocab, _ = train(SMALL, 272, [EOT, PAD])
    got = [vocab.get(256), vocab.get(257)]
    if got != [EOT.encode(), PAD.encode()]:
        where = {s: [i for i, t in vocab.items() if t == s.encode()] for s in (EOT, PAD)}
        climb_failed(f"ids 256, 257 hold {got}; the special tokens are at ids {where}",
                     "add the special tokens (UTF-8 bytes, in the order given) right after the 256 bytes, "
                     "before any merge")  # fmt: skip


@rung(4)
def test_train_bpe_learns_one_token_per_merge_up_to_vocab_size():
    vocab, merges = train(SMALL, 270, [EOT])
    if len(merges) < 13:
        climb_failed(f"vocab_size 270 with 1 special token: training stopped after {len(merges)} merges "
                     "(expected 13), though this corpus has pairs left for many more",
                     "the number of merges, vocab_size - 256 - len(special_tokens), and that merging a pair "
                     "keeps every other token of the pre-token (pairs lost end the training early)")  # fmt: skip
    if len(vocab) != 270 or len(merges) != 13:
        climb_failed(f"vocab_size 270 with 1 special token gave {len(vocab)} tokens and {len(merges)} merges "
                     "(expected 270 and 13)",
                     "vocab_size counts the 256 bytes, the special tokens and the merges: "
                     "learn vocab_size - 256 - len(special_tokens) merges")  # fmt: skip
    numbered = [vocab.get(257 + k) for k in range(len(merges))]
    joined = [a + b for a, b in merges]
    if numbered != joined:
        k = next(k for k in range(len(merges)) if numbered[k] != joined[k])
        climb_failed(f"merge {k} is {merges[k]!r} but id {257 + k} holds {numbered[k]!r}",
                     "each merge adds the two tokens' bytes joined (first + second) at the next id, in merge order")  # fmt: skip


@rung(5)
def test_train_bpe_merges_join_tokens_already_in_the_vocabulary():
    vocab, merges = train(SMALL, 270, [EOT])
    known = {bytes([b]) for b in range(256)}
    for k, (a, b) in enumerate(merges):
        if a not in known or b not in known:
            climb_failed(f"merge {k} {(a, b)!r} joins a token that neither is a byte nor came from an earlier merge",
                         "merge two adjacent tokens of the current pre-tokens: bytes or earlier merges' results")  # fmt: skip
        known.add(a + b)


@rung(6)
def test_train_bpe_ends_below_vocab_size_when_no_pair_is_left():
    vocab, merges = train("ab", 300, [])
    if merges != [(b"a", b"b")] or len(vocab) != 257:
        invented = [a + b for a, b in merges if (a + b) not in b"ab"]
        climb_failed(f"on 'ab' with vocab_size 300 the merges were {merges!r}, the vocabulary {len(vocab)} tokens "
                     "(expected the one merge (a, b) and 257 tokens)",
                     f"a merge made {invented[0]!r}, which 'ab' does not hold: merging a pair replaces its two tokens "
                     "by one and adds none" if invented else
                     "stop when no pre-token has two tokens left: the vocabulary may end below vocab_size")  # fmt: skip


@rung(7)
def test_train_bpe_drops_special_tokens_before_counting():
    _, merges = train(f"{EOT}" * 40 + "hi hi", 259, [EOT])
    if merges[:1] != [(b"h", b"i")]:
        climb_failed(f"on 40 {EOT} and 'hi hi' the first merge was {merges[:1]!r}, expected (h, i)",
                     "split the text on the special tokens and drop them before pre-tokenizing and counting")  # fmt: skip


@rung(8)
def test_train_bpe_counts_each_side_of_a_special_token_apart():
    _, merges = train(f"a{EOT}b " * 30 + "xy xy", 262, [EOT])
    if any(b"a" in a + b and b"b" in a + b for a, b in merges):
        climb_failed(f"'a{EOT}b' 30 times: a merge joined the 'a' before and the 'b' after the special token "
                     f"(merges {merges!r})",
                     "the special tokens split the text into pieces that are pre-tokenized and counted apart")  # fmt: skip


@rung(9)
def test_train_bpe_matches_special_tokens_literally():
    text = "<< << << endoftext endoftext ||> ||> ab"
    _, merges = train(text, 258, [EOT])
    if merges[:1] != [(b"<", b"<")]:
        climb_failed(f"on {text!r} (no special token in it) the first merge was {merges[:1]!r}, expected (<, <)",
                     "split only where the whole special token occurs: '<', '|', '>' and 'endoftext' elsewhere are "
                     "text (a regex of the special tokens needs regex.escape)")  # fmt: skip


@rung(10)
def test_train_bpe_counts_pairs_within_gpt2_pre_tokens():
    text = "hi, hi, hi. 12ab 12ab it's"
    vocab, merges = train(text, 300, [])
    pretokens = regex.findall(GPT2_SPLIT, text)
    for a, b in merges:
        if not any((a + b).decode("utf-8", "replace") in p for p in pretokens):
            climb_failed(f"on {text!r} the merge {(a, b)!r} spans two pre-tokens ({pretokens!r})",
                         "pre-tokenize each piece with GPT-2's pattern and count pairs inside each pre-token only")  # fmt: skip
    if not any(a == b" " for a, b in merges):
        climb_failed(f"on {text!r} no merge joins the space to the word after it (merges {merges!r})",
                     "keep each pre-token as GPT-2's pattern gives it, its leading space included (no str.split)")  # fmt: skip


@rung(11)
def test_train_bpe_counts_each_pre_token_as_often_as_it_occurs():
    text = "pq\n" * 5 + "rs\nrt\nru\n"
    _, merges = train(text, 257, [])
    if merges != [(b"p", b"q")]:
        climb_failed(f"with 'pq' 5 times and 'rs', 'rt', 'ru' once each, the first merge was {merges!r}",
                     "a pair counts once for every occurrence of its pre-token: weight by the pre-token's count")  # fmt: skip


@rung(12)
def test_train_bpe_breaks_ties_by_the_greater_pair_of_bytes():
    _, merges = train("ab ab ab cd cd cd", 257, [])
    if merges != [(b"c", b"d")]:
        climb_failed(f"(a, b), (c, d) and (' ', c) each occur 3 times; the first merge was {merges!r}",
                     "among equally frequent pairs take the lexicographically greatest (a, b) of bytes: "
                     "max(counts, key=lambda p: (counts[p], p))")  # fmt: skip
    # (z, z) merged first, then (a, a): (zz, q) and (aa, q) tie, "zz" > "aa" as bytes, not as ids or first seen
    text = "aaq\n" * 3 + "zzq\n" * 3 + "zz\n" * 2 + "aa\n"
    _, merges = train(text, 259, [])
    if merges != [(b"z", b"z"), (b"a", b"a"), (b"zz", b"q")]:
        climb_failed(f"on {text!r}, after (z, z) and (a, a), (zz, q) and (aa, q) each occur 3 times; "
                     f"the merges were {merges!r}",
                     "compare tied pairs by their tokens' bytes, never by their ids or the order first seen")  # fmt: skip


REPLAY = ("the cat sat on the mat; the mat sat on the cat. " * 3 + "aaaa aaa abab ababab\r\n" * 2 + EOT) * 4


@rung(14)
def test_train_bpe_each_merge_is_the_most_frequent_pair_after_the_earlier_merges():
    _, merges = train(REPLAY, 256 + 1 + 60, [EOT])
    words = pretoken_counts(REPLAY, [EOT])
    for k, pair in enumerate(merges):
        counts = pair_counts(words)
        best = max(counts, key=lambda p: (counts[p], p), default=None)
        if pair != best:
            climb_failed(
                f"merge {k} is {pair!r}, which occurs {counts.get(pair, 0)} times after merges 0..{k - 1}, "
                f"while {best!r} occurs {counts[best]} times",
                "after each merge replace every occurrence of the pair in each pre-token (left to right, "
                "non-overlapping) and update the pair counts: remove the pairs that disappeared, add the new ones",
            )
        words = apply_merge(words, pair)


@rung(13)
def test_train_bpe_keeps_a_carriage_return_in_the_text():
    _, merges = train("a\r\nb\r\nc\r\n" * 4, 257, [])
    if merges != [(b"\r", b"\n")]:
        climb_failed(f"on 'a\\r\\nb\\r\\nc\\r\\n' 4 times the merges were {merges!r}, expected (\\r, \\n)",
                     "read the corpus without newline translation (binary, or open(..., newline='')): "
                     "'\\r\\n' is two bytes and one whitespace pre-token")  # fmt: skip
