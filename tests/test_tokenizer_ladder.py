"""tokenizer, rung by rung: what encode and decode return; bytes and merged tokens looked up in
the vocabulary (whatever their ids); decode joining bytes before UTF-8; merges inside GPT-2
pre-tokens, lowest rank first; the special tokens (their own ids, added when the vocabulary lacks
them, longest first, matched literally); encode_iterable equal to encode wherever the chunks are
cut, and lazy; and last, encode equal to an obviously correct encoder on mixed text
(tests/_ladder.py). Small hand-made vocabularies, so every expected id is known."""

import io

import regex

from ._ladder import climb_failed, rung
from .adapters import get_tokenizer
from .oracles import GPT2_SPLIT, train_bpe_by_recounting

EOT = "<|endoftext|>"


def vocab_of(merges: list[tuple[bytes, bytes]], byte_id=lambda b: b, merged_ids=None) -> dict[int, bytes]:
    """The bytes at byte_id(b), then each merge's token at merged_ids[k] (default 256 + k)."""
    vocab = {byte_id(b): bytes([b]) for b in range(256)}
    ids = merged_ids or [256 + k for k in range(len(merges))]
    return vocab | {i: a + b for i, (a, b) in zip(ids, merges, strict=True)}


def encode(tok, text: str) -> list[int]:
    """tok.encode(text); an exception raised is this rung's failure, said in words."""
    try:
        return tok.encode(text)
    except KeyError as e:
        climb_failed(f"encode({text!r}) looked up {e} and found no id (KeyError)",
                     "every piece encode looks up needs an id: special tokens the vocabulary lacks get new ids, "
                     "and a special-token pattern matches whole special tokens only (regex.escape)")  # fmt: skip
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"encode({text!r}) raised {type(e).__name__}: {e}", "encode must handle any str")


def decode(tok, ids: list[int]) -> str:
    try:
        return tok.decode(ids)
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"decode({ids}) raised {type(e).__name__}: {e}",
                     "decode any valid ids: join the tokens' bytes, decode with errors='replace'")  # fmt: skip


def first_difference(tok, got: list[int], want: list[int]) -> str:
    """From the first differing token on, a few tokens of each, as bytes."""
    k = next((k for k, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), min(len(got), len(want)))
    return f"from token {k} on, {pieces(tok, got[k : k + 4])!r} where encode gives {pieces(tok, want[k : k + 4])!r}"


def pieces(tok, ids: list[int]) -> list[bytes]:
    return [tok_vocab(tok).get(i, b"?") for i in ids]


def tok_vocab(tok) -> dict[int, bytes]:
    return getattr(tok, "vocab", {})


@rung(1)
def test_tokenizer_encode_gives_a_list_of_ids_and_decode_a_str():
    tok = get_tokenizer(vocab_of([]), [])
    ids = encode(tok, "hi!")
    if not isinstance(ids, list) or ids != [104, 105, 33]:
        climb_failed(f"with the 256 bytes as the vocabulary and no merges, encode('hi!') gave {ids!r}",
                     "encode returns a list of int ids: here the UTF-8 bytes 104, 105, 33")  # fmt: skip
    text = decode(tok, [104, 105, 33])
    if text != "hi!":
        climb_failed(f"decode([104, 105, 33]) gave {text!r}", "decode returns the str of the ids' bytes: 'hi!'")


def SHUFFLED(b: int) -> int:  # noqa: N802 -- a constant permutation
    """A byte's id in a vocabulary that numbers the bytes differently."""
    return (b * 7 + 3) % 256


@rung(2)
def test_tokenizer_looks_up_byte_tokens_in_the_vocabulary():
    tok = get_tokenizer(vocab_of([], byte_id=SHUFFLED), [])
    ids = encode(tok, "ab")
    if ids != [SHUFFLED(97), SHUFFLED(98)]:
        climb_failed(f"in a vocabulary holding byte b at id (7 b + 3) mod 256, encode('ab') gave {ids!r}, "
                     f"expected {[SHUFFLED(97), SHUFFLED(98)]}",
                     "map each byte to the id the vocabulary gives it (invert vocab), never to the byte value")  # fmt: skip
    text = decode(tok, [SHUFFLED(97), SHUFFLED(98)])
    if text != "ab":
        climb_failed(f"in that vocabulary decode([{SHUFFLED(97)}, {SHUFFLED(98)}]) gave {text!r}",
                     "decode looks each id up in vocab")  # fmt: skip


MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"c"), (b"a", b"t"), (b" c", b"at"), (b"\xf0", b"\x9f"), (b"e", b"r")]
MERGES += [(b"\n", b"\n"), (b" ", b" "), (b"\n\n", b"\n")]
SAMPLES = ["the cat", "  the   cat\n\n\tthere ", "Ça, 日本語 — naïve", "emoji 🤖👍🏽 ok", "it's 12345 cats", ""]


@rung(3)
def test_tokenizer_decode_of_encode_gives_the_text_back():
    tok = get_tokenizer(vocab_of(MERGES), MERGES)
    for text in SAMPLES:
        back = decode(tok, encode(tok, text))
        if back != text:
            climb_failed(f"decode(encode({text!r})) gave {back!r}",
                         "encode keeps every byte of the text (spaces, newlines, multi-byte characters); "
                         "decode joins the tokens' bytes")  # fmt: skip


@rung(4)
def test_tokenizer_decode_joins_the_bytes_before_decoding_utf8():
    tok = get_tokenizer(vocab_of([]), [])
    euro = list("€".encode())
    text = decode(tok, euro)
    if text != "€":
        climb_failed(f"decode of the three byte tokens of '€' ({euro}) gave {text!r}",
                     "join all the tokens' bytes first, then decode the whole: a character may span tokens")  # fmt: skip
    text = decode(tok, [97, *euro[:2], 98])
    if text != "a\ufffdb":
        climb_failed(f"decode([97, {euro[0]}, {euro[1]}, 98]) (a, a cut-off '€', b) gave {text!r}, expected 'a\\ufffdb'",
                     "bytes.decode('utf-8', errors='replace'): invalid UTF-8 becomes U+FFFD, never an error "
                     "and never dropped")  # fmt: skip


@rung(5)
def test_tokenizer_merges_inside_gpt2_pre_tokens_only():
    merges = [(b"a", b" "), (b" ", b"b")]
    tok = get_tokenizer(vocab_of(merges), merges)
    ids = encode(tok, "a b")
    if ids != [97, 257]:
        got = pieces(tok, ids)
        climb_failed(f"with merges (a, ' ') then (' ', b), encode('a b') gave tokens {got!r}, "
                     "expected [b'a', b' b']",
                     "no merge was made, though the pre-token ' b' holds the pair (' ', b): merge every pre-token, "
                     "the short ones too" if got == [b"a", b" ", b"b"] else
                     "pre-tokenize with GPT-2's pattern (a space belongs to the word after it) and merge inside "
                     "each pre-token only")  # fmt: skip


@rung(6)
def test_tokenizer_looks_up_merged_tokens_in_the_vocabulary():
    merges = [(b"a", b"b"), (b"ab", b"c"), (b"x", b"y")]
    tok = get_tokenizer(vocab_of(merges, merged_ids=[700, 500, 600]), merges)
    ids = encode(tok, "abc xy")
    if ids != [500, 32, 600]:
        climb_failed(f"in a vocabulary that numbers the merged tokens ab, abc, xy as 700, 500, 600, "
                     f"encode('abc xy') gave {ids!r}, expected [500, 32, 600]",
                     "a merge's result has the id the vocabulary gives its bytes, not 256 + its rank")  # fmt: skip


@rung(7)
def test_tokenizer_applies_the_merge_of_lowest_rank_first():
    cases = [
        ([(b"b", b"c"), (b"a", b"b")], "abc", [b"a", b"bc"]),  # the leftmost pair is not the first merge
        ([(b"a", b"b"), (b"b", b"c")], "abc", [b"ab", b"c"]),  # rank 0 before rank 1
        ([(b"a", b"b"), (b"b", b"c")], "abcbc", [b"ab", b"c", b"bc"]),  # (b, c) is more frequent, ranks later
    ]
    for merges, text, want in cases:
        tok = get_tokenizer(vocab_of(merges), merges)
        got = pieces(tok, encode(tok, text))
        if got != want:
            climb_failed(f"with merges {merges} (in rank order), {text!r} became {got!r}, expected {want!r}",
                         "repeatedly merge the adjacent pair of lowest rank (the earliest learned), wherever it "
                         "is in the pre-token, however often it occurs")  # fmt: skip


@rung(8)
def test_tokenizer_merges_every_occurrence_and_builds_on_earlier_merges():
    merges = [(b"a", b"a"), (b"aa", b"aa"), (b"a", b"b")]
    tok = get_tokenizer(vocab_of(merges), merges)
    for text, want in (("aaaaa", [b"aaaa", b"a"]), ("ababab", [b"ab", b"ab", b"ab"])):
        got = pieces(tok, encode(tok, text))
        if got != want:
            climb_failed(f"with merges {merges}, {text!r} became {got!r}, expected {want!r}",
                         "merge every occurrence of the pair, left to right without overlap, then look for the "
                         "next pair among the merged tokens until no pair has a rank")  # fmt: skip


@rung(9)
def test_tokenizer_encodes_a_special_token_as_its_own_id():
    vocab = vocab_of(MERGES) | {len(MERGES) + 256: EOT.encode()}
    tok = get_tokenizer(vocab, MERGES, [EOT])
    ids = encode(tok, f"the{EOT} cat")
    want = [257, len(MERGES) + 256, 260]
    if ids != want:
        climb_failed(f"with {EOT} at id {want[1]}, encode('the{EOT} cat') gave tokens {pieces(tok, ids)!r}",
                     "split the text on the special tokens first: each one is its own id, the text before "
                     "and after it is encoded as usual")  # fmt: skip
    plain = encode(get_tokenizer(vocab, MERGES), EOT)
    if len(plain) < 2:
        climb_failed(f"with no special tokens given, encode({EOT!r}) gave {plain}",
                     "only the special tokens passed to the tokenizer are special; otherwise it is text")  # fmt: skip


@rung(10)
def test_tokenizer_adds_special_tokens_the_vocabulary_lacks():
    vocab = vocab_of(MERGES)
    tok = get_tokenizer(vocab, MERGES, ["<|new|>"])
    ids = encode(tok, "x<|new|>y")
    if len(ids) != 3 or ids[1] in vocab or decode(tok, ids) != "x<|new|>y":
        climb_failed(f"with '<|new|>' absent from the vocabulary, encode('x<|new|>y') gave {ids}",
                     "a special token the vocabulary lacks gets a new id (one past the largest), "
                     "which decode knows too")  # fmt: skip


@rung(11)
def test_tokenizer_matches_the_longest_special_token_where_they_overlap():
    vocab = vocab_of([]) | {256: EOT.encode(), 257: (EOT * 2).encode()}
    for specials in ([EOT, EOT * 2], [EOT * 2, EOT]):
        tok = get_tokenizer(vocab, [], specials)
        ids = encode(tok, f"a{EOT}{EOT}b{EOT}")
        if ids != [97, 257, 98, 256]:
            climb_failed(f"with special tokens {specials}, encode('a{EOT}{EOT}b{EOT}') gave {ids}, "
                         "expected [97, 257, 98, 256]",
                         "where special tokens overlap the longest wins, whatever the order given: "
                         "match them longest first")  # fmt: skip


@rung(12)
def test_tokenizer_matches_special_tokens_literally():
    vocab = vocab_of([]) | {256: EOT.encode()}
    tok = get_tokenizer(vocab, [], [EOT])
    text = "a<b|c> endoftext <|x|>"
    ids = encode(tok, text)
    if ids != list(text.encode()):
        climb_failed(f"with special token {EOT}, encode({text!r}) gave {ids}, expected its bytes",
                     "match only the whole special token: '<', '|', '>' and its words elsewhere are text "
                     "(a regex of the special tokens needs regex.escape)")  # fmt: skip


ITERABLE_TEXT = f"the cat's\n\n\n  there{EOT}x{EOT}{EOT}\n \n🤖 it'll\n\nthe\n\n\ncat\n"


def iterable_vocab():
    vocab = vocab_of(MERGES) | {300: EOT.encode(), 301: (EOT * 2).encode()}
    return get_tokenizer(vocab, MERGES, [EOT, EOT * 2])


def encode_iterable(tok, chunks) -> list[int]:
    try:
        return list(tok.encode_iterable(chunks))
    except Exception as e:  # noqa: BLE001 -- the implementation under test raised
        climb_failed(f"encode_iterable raised {type(e).__name__}: {e}", "encode_iterable takes any iterable of str")


@rung(13)
def test_tokenizer_encode_iterable_equals_encode_wherever_the_chunks_are_cut():
    tok = iterable_vocab()
    want = encode(tok, ITERABLE_TEXT)
    for k in range(len(ITERABLE_TEXT) + 1):
        chunks = [ITERABLE_TEXT[:k], ITERABLE_TEXT[k:]]
        got = encode_iterable(tok, iter(chunks))
        if got != want:
            climb_failed(f"cut into {chunks[0][-12:]!r} | {chunks[1][:12]!r} (at character {k}), encode_iterable "
                         f"gave {first_difference(tok, got, want)}",
                         "the ids of the joined chunks, whatever the cuts: hold back the tail more text could "
                         "change (the last pre-tokens, a whitespace run, a partial special token) and encode "
                         "what is left at the end")  # fmt: skip
    for chunks in (list(ITERABLE_TEXT), io.StringIO(ITERABLE_TEXT)):
        got = encode_iterable(tok, chunks)
        if got != want:
            climb_failed(f"one character per chunk or a file's lines, encode_iterable gave "
                         f"{first_difference(tok, got, want)}",
                         "the ids of the joined chunks, whatever the cuts")  # fmt: skip


class ReadTooFar(Exception):
    pass


@rung(14)
def test_tokenizer_encode_iterable_yields_before_reading_everything():
    tok = iterable_vocab()

    def lines():
        yield "the cat sat\n"
        yield "on the mat\n"
        raise ReadTooFar

    try:
        first = next(iter(tok.encode_iterable(lines())))
    except ReadTooFar:
        climb_failed("asked for its first id, encode_iterable read past the second line",
                     "yield ids as soon as the text read fixes them: never join or list the whole iterable")  # fmt: skip
    if first != encode(tok, "the")[0]:
        climb_failed(f"the first id of encode_iterable was {first}, encode's {encode(tok, 'the')[0]}",
                     "yield the same ids as encode, in order")  # fmt: skip


MIXED = (
    "The theory: there are 3 cats, 12 dogs and 1,234 birds.\n\n  Then the cat said 'hello there'!\r\n"
    "Ça va? 日本語のテキスト 🤖👍🏽 they're, we'll, it's.\t\tend   \n"
) * 3


@rung(15)
def test_tokenizer_encode_equals_merging_by_rank_within_each_pre_token():
    vocab, merges = train_bpe_by_recounting(MIXED, 256 + 1 + 80, [EOT])
    tok = get_tokenizer(vocab, merges, [EOT])
    rank = {pair: k for k, pair in enumerate(merges)}
    for pretoken in regex.findall(GPT2_SPLIT, MIXED):
        parts = [bytes([b]) for b in pretoken.encode()]
        while pairs := [p for p in zip(parts, parts[1:], strict=False) if p in rank]:
            best = min(pairs, key=rank.__getitem__)
            i = next(i for i in range(len(parts) - 1) if (parts[i], parts[i + 1]) == best)
            parts[i : i + 2] = [best[0] + best[1]]
        got = pieces(tok, encode(tok, pretoken))
        if got != parts:
            climb_failed(f"the pre-token {pretoken!r} became {got!r}, expected {parts!r}",
                         "within each pre-token merge the pair of lowest rank, repeatedly, until none has a rank")  # fmt: skip
    whole = encode(tok, MIXED)
    want = [i for p in regex.findall(GPT2_SPLIT, MIXED) for i in encode(tok, p)]
    if whole != want:
        climb_failed("encoding the whole text differs from encoding its pre-tokens one by one",
                     "split with GPT-2's pattern and encode each pre-token on its own (a cache keyed on "
                     "anything but the whole pre-token mixes them up)")  # fmt: skip
