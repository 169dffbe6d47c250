"""Byte-level BPE, training and the tokenizer: the builders of their inputs, on seeded synthetic text
(cs336_basics/tokenizer/synthetic.py), never a download, then their cases and what they grade of
the public tests, then their mistakes (plausible wrong training and encoding). Witness: the texts
to encode hold `<|endoftext|>` twice in a row, so that `<|endoftext|><|endoftext|>`, when listed,
must match as one token."""

import collections
import os
import tempfile
from functools import partial

import regex

import cs336_basics.tokenizer.pretokenize as P
import cs336_basics.tokenizer.tokenizer as TM
import cs336_basics.tokenizer.train_bpe as B
from cs336_basics.corpus import EOT
from cs336_basics.staff.cases.case import EXACT_INT64, Case
from cs336_basics.staff.cases.draw import Rng
from cs336_basics.staff.mistakes import mistake
from cs336_basics.tokenizer import tensors
from cs336_basics.tokenizer.synthetic import synthetic_text
from cs336_basics.tokenizer.train_bpe import train_bpe


def train_bpe_case(n_docs: int, vocab_size: int, special_tokens: list[str], **text_kw):
    """A corpus of synthetic text and the vocabulary size to train to."""

    def make(rng: Rng) -> dict:
        text = synthetic_text(rng, n_docs, special_tokens, **text_kw)
        return dict(corpus=tensors.text_to_tensor(text), vocab_size=vocab_size, special_tokens=list(special_tokens))

    return make


def trained_vocabulary(rng: Rng, n_docs: int, vocab_size: int, special_tokens: list[str], **text_kw) -> dict:
    """token_bytes, token_offsets and merges of train_bpe (the reference) on a synthetic corpus."""
    text = synthetic_text(rng, n_docs, special_tokens, **text_kw)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        vocab, merges = train_bpe(path, vocab_size, special_tokens, num_processes=1)
    token_bytes, token_offsets = tensors.vocab_to_tensors(vocab)
    return dict(token_bytes=token_bytes, token_offsets=token_offsets, merges=tensors.merges_to_tensor(merges, vocab))


def tokenizer_case(
    vocab_size: int,
    special_tokens: list[str] | None,
    n_docs: int = 300,
    text_docs: int = 20,
    what: str = "text",
    **text_kw,
):
    """A vocabulary trained on one synthetic corpus and, from the same generator, another text
    to encode (what="text"), or token ids to decode (what="ids": the text's ids with single bytes
    of split multi-byte characters among them)."""

    def make(rng: Rng) -> dict:
        specials = list(special_tokens or [])
        kw = trained_vocabulary(rng, n_docs, vocab_size, specials, **text_kw)
        text = synthetic_text(rng, text_docs, specials, unicode_share=0.15)
        kw["special_tokens"] = special_tokens
        if what == "text":
            return kw | dict(text=tensors.text_to_tensor(text))
        from cs336_basics.tokenizer.tokenizer import Tokenizer

        vocab = tensors.tensors_to_vocab(kw["token_bytes"], kw["token_offsets"])
        ids = Tokenizer(vocab, tensors.tensor_to_merges(kw["merges"], vocab), special_tokens).encode(text)
        partial = [b for b in "€😀é".encode() if b >= 0x80]  # leading and continuation bytes alone
        for position in sorted(rng.integers(0, len(ids), size=6).tolist(), reverse=True):
            ids.insert(position, partial[int(rng.integers(0, len(partial)))])  # ids 0-255 are the bytes
        import torch

        return kw | dict(ids=torch.tensor(ids, dtype=torch.int64))

    return make


def _literal_specials_and_crlf(rng) -> dict:
    """A corpus of words holding '<', '|' and '>', separated by spaces, '\\r\\n' and the special token."""
    words = ["a<b", "x|y", "<|end", "endoftext", "|>", "<<", "ab", "ba", "end", "text"]
    picks = rng.integers(0, len(words), size=400).tolist()
    seps = rng.integers(0, 4, size=400).tolist()
    parts = [words[p] + (" ", "\r\n", EOT, " \r\n\r\n")[s] for p, s in zip(picks, seps, strict=True)]
    corpus = "".join(parts)
    return dict(corpus=tensors.text_to_tensor(corpus), vocab_size=330, special_tokens=[EOT])


def _pairs_run_out(rng) -> dict:
    """A corpus of four words: its pairs run out before a vocabulary of 300."""
    words = ["ab", "ba", "abc", "c"]
    corpus = " ".join(words[i] for i in rng.integers(0, len(words), size=40).tolist())
    return dict(corpus=tensors.text_to_tensor(corpus), vocab_size=300, special_tokens=[EOT])


def _renumbered_vocabulary(rng) -> dict:
    """A trained vocabulary with its ids permuted; the text holds a special token it lacks."""
    kw = trained_vocabulary(rng, 300, 500, [EOT])
    vocab = tensors.tensors_to_vocab(kw["token_bytes"], kw["token_offsets"])
    merges = tensors.tensor_to_merges(kw["merges"], vocab)
    order = rng.permutation(len(vocab)).tolist()
    renumbered = {new: vocab[old] for new, old in enumerate(order)}
    token_bytes, token_offsets = tensors.vocab_to_tensors(renumbered)
    text = synthetic_text(rng, 20, [EOT, "<|new|>"], unicode_share=0.15)
    return dict(
        token_bytes=token_bytes,
        token_offsets=token_offsets,
        merges=tensors.merges_to_tensor(merges, renumbered),
        special_tokens=[EOT, "<|new|>"],
        text=tensors.text_to_tensor(text),
    )


def _newline_runs(rng) -> dict:
    """A vocabulary trained on text with runs of newlines, and such a text's lines to encode."""

    def with_runs(text: str) -> str:
        return text.replace(" ", "\n\n\n ", 50).replace(".", ".\n\n", 50)

    corpus = with_runs(synthetic_text(rng, 200, [EOT]))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(corpus.encode("utf-8"))
        vocab, merges = train_bpe(path, 400, [EOT], num_processes=1)
    token_bytes, token_offsets = tensors.vocab_to_tensors(vocab)
    text = with_runs(synthetic_text(rng, 20, [EOT], unicode_share=0.15))
    return dict(
        token_bytes=token_bytes,
        token_offsets=token_offsets,
        merges=tensors.merges_to_tensor(merges, vocab),
        special_tokens=[EOT],
        text=tensors.text_to_tensor(text),
    )


train_bpe_on_text = partial(Case, component="train_bpe", adapter="run_train_bpe_on_text", **EXACT_INT64)
train_bpe_token_ids = partial(Case, component="train_bpe", adapter="run_train_bpe_token_ids", **EXACT_INT64)
tokenizer_encode = partial(Case, component="tokenizer", adapter="run_tokenizer_encode", **EXACT_INT64)
tokenizer_decode = partial(Case, component="tokenizer", adapter="run_tokenizer_decode", **EXACT_INT64)
tokenizer_encode_iterable = partial(Case, component="tokenizer", adapter="run_tokenizer_encode_iterable", **EXACT_INT64)
tokenizer_encode_iterable_lazily = partial(
    Case, component="tokenizer", adapter="run_tokenizer_encode_iterable_lazily", **EXACT_INT64
)

CASES = [
    # train_bpe: the merges and vocabulary (as tensors.bpe_table, exact) of ~15 kB of synthetic text
    # (train_bpe_case) whose documents are separated by <|endoftext|>, the glued words around it
    # a witness for merging across it; and of text without special tokens
    train_bpe_on_text("train_bpe_one_special", seed=90, make=train_bpe_case(150, 400, [EOT])),
    train_bpe_on_text("train_bpe_no_specials", seed=91, make=train_bpe_case(100, 320, [])),
    # ~22 kB with a tenth of the words Unicode or emoji, one, none and two special tokens: the
    # tables the obviously correct trainer (tests/oracles.py, recounting every pair before every
    # merge) gives on these corpora, checked in the second tier, so no public test runs it
    train_bpe_on_text(
        "train_bpe_unicode_one_special", seed=154, make=train_bpe_case(200, 500, [EOT], unicode_share=0.1)
    ),
    train_bpe_on_text("train_bpe_unicode_no_specials", seed=155, make=train_bpe_case(200, 400, [], unicode_share=0.1)),
    train_bpe_on_text(
        "train_bpe_unicode_eot_and_pad", seed=156, make=train_bpe_case(200, 700, [EOT, "<|pad|>"], unicode_share=0.1)
    ),
    # hidden: ~0.4 MB and 1,500 tokens (what the handout's time budget is about); two special
    # tokens and a fifth of the words Unicode or emoji; a vocabulary of only the bytes and the
    # special token (no merge)
    train_bpe_on_text(
        "train_bpe_larger_corpus",
        hidden=True,
        seed=1301,
        make=train_bpe_case(4000, 1500, [EOT], words_per_doc=(10, 40), lexicon_size=2000),
    ),
    train_bpe_on_text(
        "train_bpe_unicode_two_specials",
        hidden=True,
        seed=1302,
        make=train_bpe_case(200, 600, [EOT, "<|pad|>"], unicode_share=0.1),
    ),
    train_bpe_on_text("train_bpe_zero_merges", hidden=True, seed=1303, make=train_bpe_case(20, 257, [EOT])),
    # a corpus holding '\r\n', '<', '|', '>' and the special token's word outside it: matched
    # literally, no newline translation
    train_bpe_on_text("train_bpe_literal_specials_crlf", hidden=True, seed=1501, make=_literal_specials_and_crlf),
    # the ids of the vocabulary: the bytes at 0-255, the specials next, the merges in order
    train_bpe_token_ids("train_bpe_token_ids", hidden=True, seed=1505, make=train_bpe_case(60, 330, [EOT, "<|pad|>"])),
    # a corpus whose pairs run out before vocab_size
    train_bpe_on_text("train_bpe_pairs_run_out", hidden=True, seed=1502, make=_pairs_run_out),
    # tokenizer: a vocabulary of 400 trained on synthetic text; encode a text holding both
    # <|endoftext|> and <|endoftext|><|endoftext|> (witness: both listed, the longer must win);
    # decode ids with lone bytes of multi-byte characters among them (U+FFFD, not an error);
    # encode_iterable over a text's lines
    tokenizer_encode("tokenizer_encode_overlapping_specials", seed=92, make=tokenizer_case(400, [EOT, EOT * 2])),
    tokenizer_decode("tokenizer_decode_split_characters", seed=93, make=tokenizer_case(400, [EOT], what="ids")),
    tokenizer_encode_iterable("tokenizer_encode_iterable_lines", seed=94, make=tokenizer_case(400, [EOT, EOT * 2])),
    tokenizer_decode("tokenizer_decode_no_specials", seed=136, make=tokenizer_case(320, [], what="ids")),
    # hidden: no special tokens (None); encode_iterable on Unicode-heavy lines with a larger
    # vocabulary; decoding with a vocabulary of 1,000
    tokenizer_encode("tokenizer_no_specials", hidden=True, seed=1311, make=tokenizer_case(500, None)),
    tokenizer_encode_iterable(
        "tokenizer_iterable_unicode",
        hidden=True,
        seed=1312,
        make=tokenizer_case(1000, [EOT], n_docs=600, text_docs=60, unicode_share=0.1),
    ),
    tokenizer_decode(
        "tokenizer_decode_larger_vocab",
        hidden=True,
        seed=1313,
        make=tokenizer_case(1000, [EOT, "<|pad|>"], n_docs=600, what="ids"),
    ),
    # whether encode_iterable yields before the last line is read
    tokenizer_encode_iterable_lazily(
        "tokenizer_iterable_is_lazy", hidden=True, seed=1506, make=tokenizer_case(400, [EOT])
    ),
    # a vocabulary numbered out of order (bytes away from ids 0-255, merged tokens not in merge
    # order) and a text holding a special token it lacks
    tokenizer_encode("tokenizer_renumbered_vocabulary", hidden=True, seed=1503, make=_renumbered_vocabulary),
    # encode_iterable over lines with runs of newlines
    tokenizer_encode_iterable("tokenizer_iterable_newline_runs", hidden=True, seed=1504, make=_newline_runs),
]


# What the grade checks of each public test of these components (staff/graded_behaviours.py):
# {component: {public test: the graded cases that check the same behaviour}}.
GRADED: dict[str, dict[str, tuple[str, ...]]] = {
    "train_bpe": {
        "test_train_bpe_matches_fixture": (
            "train_bpe_one_special",
            "train_bpe_no_specials",
            "train_bpe_unicode_one_special",
            "train_bpe_unicode_no_specials",
            "train_bpe_unicode_eot_and_pad",
            "train_bpe_larger_corpus",
            "train_bpe_unicode_two_specials",
        ),
        "test_train_bpe_vocabulary_holds_the_bytes_the_specials_and_one_token_per_merge": (
            "train_bpe_unicode_two_specials",
            "train_bpe_token_ids",
        ),
        "test_train_bpe_never_merges_across_a_special_token": ("train_bpe_one_special",),
        "test_train_bpe_does_not_count_special_tokens_as_text": (
            "train_bpe_one_special",
            "train_bpe_literal_specials_crlf",
        ),
        "test_train_bpe_breaks_ties_by_the_greater_pair": ("train_bpe_one_special", "train_bpe_larger_corpus"),
        "test_train_bpe_counts_pairs_within_pre_tokens_only": (
            "train_bpe_no_specials",
            "train_bpe_literal_specials_crlf",
        ),
        "test_train_bpe_stops_when_no_pair_is_left": ("train_bpe_pairs_run_out",),
        "test_train_bpe_returns_a_vocab_dict_and_a_merges_list": ("train_bpe_one_special",),
        "test_train_bpe_vocab_starts_with_the_256_bytes_at_ids_0_to_255": ("train_bpe_token_ids",),
        "test_train_bpe_special_tokens_come_right_after_the_bytes_in_the_order_given": ("train_bpe_token_ids",),
        "test_train_bpe_learns_one_token_per_merge_up_to_vocab_size": ("train_bpe_token_ids", "train_bpe_one_special"),
        "test_train_bpe_merges_join_tokens_already_in_the_vocabulary": ("train_bpe_one_special",),
        "test_train_bpe_ends_below_vocab_size_when_no_pair_is_left": ("train_bpe_pairs_run_out",),
        "test_train_bpe_drops_special_tokens_before_counting": (
            "train_bpe_one_special",
            "train_bpe_literal_specials_crlf",
        ),
        "test_train_bpe_counts_each_side_of_a_special_token_apart": ("train_bpe_one_special",),
        "test_train_bpe_matches_special_tokens_literally": ("train_bpe_literal_specials_crlf",),
        "test_train_bpe_counts_pairs_within_gpt2_pre_tokens": (
            "train_bpe_no_specials",
            "train_bpe_literal_specials_crlf",
        ),
        "test_train_bpe_counts_each_pre_token_as_often_as_it_occurs": ("train_bpe_one_special",),
        "test_train_bpe_breaks_ties_by_the_greater_pair_of_bytes": ("train_bpe_one_special", "train_bpe_larger_corpus"),
        "test_train_bpe_each_merge_is_the_most_frequent_pair_after_the_earlier_merges": ("train_bpe_larger_corpus",),
        "test_train_bpe_keeps_a_carriage_return_in_the_text": ("train_bpe_literal_specials_crlf",),
    },
    "tokenizer": {
        "test_tokenizer_matches_fixture": (
            "tokenizer_encode_overlapping_specials",
            "tokenizer_decode_split_characters",
            "tokenizer_encode_iterable_lines",
        ),
        "test_tokenizer_encode_equals_hf_tokenizers_on_a_learned_vocabulary": ("tokenizer_no_specials",),
        "test_tokenizer_encode_equals_hf_tokenizers_on_smol2_vocabulary": ("tokenizer_iterable_unicode",),
        "test_tokenizer_decode_inverts_encode": ("tokenizer_decode_larger_vocab",),
        "test_tokenizer_decode_replaces_a_split_character_with_u_fffd": ("tokenizer_decode_split_characters",),
        "test_tokenizer_matches_the_longer_of_overlapping_special_tokens": ("tokenizer_encode_overlapping_specials",),
        "test_tokenizer_applies_merges_by_rank_not_left_to_right": ("tokenizer_no_specials",),
        "test_tokenizer_adds_special_tokens_missing_from_the_vocabulary": ("tokenizer_renumbered_vocabulary",),
        "test_tokenizer_encode_iterable_equals_encode_for_any_split": ("tokenizer_iterable_newline_runs",),
        "test_tokenizer_encode_iterable_is_lazy": ("tokenizer_iterable_is_lazy",),
        "test_tokenizer_encode_iterable_yields_before_reading_everything": ("tokenizer_iterable_is_lazy",),
        "test_tokenizer_encode_gives_a_list_of_ids_and_decode_a_str": ("tokenizer_no_specials",),
        "test_tokenizer_looks_up_byte_tokens_in_the_vocabulary": ("tokenizer_renumbered_vocabulary",),
        "test_tokenizer_decode_of_encode_gives_the_text_back": ("tokenizer_decode_larger_vocab",),
        "test_tokenizer_decode_joins_the_bytes_before_decoding_utf8": ("tokenizer_decode_split_characters",),
        "test_tokenizer_merges_inside_gpt2_pre_tokens_only": ("tokenizer_no_specials",),
        "test_tokenizer_looks_up_merged_tokens_in_the_vocabulary": ("tokenizer_renumbered_vocabulary",),
        "test_tokenizer_applies_the_merge_of_lowest_rank_first": ("tokenizer_no_specials",),
        "test_tokenizer_merges_every_occurrence_and_builds_on_earlier_merges": ("tokenizer_no_specials",),
        "test_tokenizer_encodes_a_special_token_as_its_own_id": ("tokenizer_encode_overlapping_specials",),
        "test_tokenizer_adds_special_tokens_the_vocabulary_lacks": ("tokenizer_renumbered_vocabulary",),
        "test_tokenizer_matches_the_longest_special_token_where_they_overlap": (
            "tokenizer_encode_overlapping_specials",
        ),
        "test_tokenizer_matches_special_tokens_literally": ("tokenizer_renumbered_vocabulary",),
        "test_tokenizer_encode_iterable_equals_encode_wherever_the_chunks_are_cut": (
            "tokenizer_iterable_newline_runs",
            "tokenizer_encode_iterable_lines",
        ),
        "test_tokenizer_encode_equals_merging_by_rank_within_each_pre_token": ("tokenizer_no_specials",),
    },
}
# Public tests of these components that check given code or the test machinery: {test: why}.
UNGRADED: dict[str, str] = {
    "test_train_bpe_in_several_processes_equals_one_process": "num_processes is beyond CS336's signature; the grade calls without it",
    "test_train_bpe_rejects_bad_arguments_by_name": "the given argument check (check_training_arguments)",
    "test_train_bpe_rejects_a_missing_file": "the given argument check (check_training_arguments)",
    "test_tokenizer_from_files_round_trips": "from_files and to_files are given code",
    "test_tokenizer_rejects_bad_arguments_by_name": "the given argument checks of __init__",
    "test_tokenizer_encode_rejects_a_byte_missing_from_the_vocabulary": "the given check in _encode_pretoken",
    "test_tokenizer_decode_rejects_an_unknown_id": "the given check in decode",
}


# ---- Mistakes, accepted variants, confusers and alternatives (registered with staff/mistakes/) ---


# the right ones, kept before any patching
_split, _count_in_file = P.split_on_special_tokens, P.count_pretokens_in_file
_merges, _merge_word = B.bpe_merges, B.merge_word


@mistake(
    "train_bpe-merges_across_special_tokens",
    P,
    "split_on_special_tokens",
    diagnosis="BPE training that deletes the special tokens and joins the text around them (pairs are "
    "counted and merged across them)",
)
def bpe_specials_removed_text_joined(text, special_tokens):
    return ["".join(_split(text, special_tokens))]  # the specials deleted, their neighbours glued


@mistake(
    "train_bpe-special_tokens_counted_as_text",
    P,
    "split_on_special_tokens",
    diagnosis="BPE training that does not split on the special tokens (they are pre-tokenized and counted as text)",
)
def bpe_specials_not_split(text, special_tokens):
    return [text]  # <|endoftext|> pre-tokenized as "<|", "endoftext", "|>" and counted


@mistake(
    "train_bpe-pairs_across_pretokens",
    P,
    "count_pretokens",
    diagnosis="BPE training without pre-tokenization (pairs counted across spaces and punctuation)",
)
def bpe_no_pretokenization(text, special_tokens):
    return collections.Counter(piece.encode("utf-8") for piece in _split(text, special_tokens) if piece)


@mistake(
    "train_bpe-ties_to_smaller_pair",
    B._Descending,
    "__lt__",
    diagnosis="BPE training breaking ties between equally frequent pairs by the smaller pair (CS336: the "
    "lexicographically greater)",
)
def ties_to_smaller_pair(self, other):
    return self.pair < other.pair  # the heap now pops the smaller of two equally frequent pairs


@mistake(
    "train_bpe-vocab_without_specials",
    B,
    "train_bpe",
    diagnosis="BPE training whose vocabulary leaves out the special tokens (vocab_size counts them)",
)
def train_bpe_without_specials_in_vocab(input_path, vocab_size, special_tokens, num_processes=None):
    vocab = {i: bytes([i]) for i in range(256)}
    counts = _count_in_file(input_path, list(special_tokens), 1)
    return vocab, _merges(counts, vocab, vocab_size - len(vocab))


@mistake(
    "train_bpe-vocab_without_all_bytes",
    B,
    "train_bpe",
    diagnosis="BPE training whose vocabulary starts from the bytes the corpus holds instead of all 256",
)
def train_bpe_only_bytes_seen(input_path, vocab_size, special_tokens, num_processes=None):
    with open(input_path, "rb") as f:
        seen = sorted(set(f.read()))
    vocab = {i: bytes([b]) for i, b in enumerate(seen)}  # only the bytes the corpus holds
    for token in special_tokens:
        vocab[len(vocab)] = token.encode("utf-8")
    counts = _count_in_file(input_path, list(special_tokens), 1)
    full = {i: bytes([i]) for i in range(256)}  # bpe_merges reads a word's byte values as ids
    merges = _merges(counts, full, vocab_size - len(vocab))
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab, merges


@mistake(
    "tokenizer-merges_by_frequency",
    TM.Tokenizer,
    "_encode_pretoken",
    diagnosis="encoding that merges the pair most frequent within the pre-token instead of the pair of "
    "lowest merge rank",
)
def encode_pretoken_most_frequent_pair(self, pretoken):
    ids = [self.byte_ids[b] for b in pretoken.encode("utf-8")]
    while True:
        pairs = collections.Counter(p for p in zip(ids, ids[1:], strict=False) if p in self.ranks)
        if not pairs:
            return ids
        pair = max(pairs, key=lambda p: (pairs[p], -self.ranks[p][0]))  # most frequent in the word, then rank
        ids = _merge_word(ids, pair, self.ranks[pair][1])


@mistake(
    "tokenizer-merges_left_to_right",
    TM.Tokenizer,
    "_encode_pretoken",
    diagnosis="encoding that merges the leftmost mergeable pair first instead of the pair of lowest rank",
)
def encode_pretoken_leftmost_pair(self, pretoken):
    ids = [self.byte_ids[b] for b in pretoken.encode("utf-8")]
    while True:
        pair = next((p for p in zip(ids, ids[1:], strict=False) if p in self.ranks), None)  # the first mergeable pair
        if pair is None:
            return ids
        ids = _merge_word(ids, pair, self.ranks[pair][1])


@mistake(
    "tokenizer-specials_shortest_first",
    TM,
    "special_tokens_pattern",
    diagnosis="encoding that matches overlapping special tokens shortest first (<|endoftext|> twice "
    "instead of <|endoftext|><|endoftext|>)",
)
def specials_shortest_first(special_tokens):
    if not special_tokens:
        return None
    return regex.compile("|".join(regex.escape(s) for s in sorted(set(special_tokens), key=len)))


@mistake(
    "tokenizer-decode_raises_on_split_character",
    TM.Tokenizer,
    "decode",
    raises=(UnicodeDecodeError,),
    diagnosis="decoding with errors='strict' (a character split between tokens raises instead of U+FFFD)",
)
def decode_strict(self, ids):
    return b"".join(self.vocab[i] for i in ids).decode("utf-8")  # raises on a split character


@mistake(
    "tokenizer-decode_drops_split_character",
    TM.Tokenizer,
    "decode",
    diagnosis="decoding with errors='ignore' (a split character vanishes instead of becoming U+FFFD)",
)
def decode_ignoring_errors(self, ids):
    return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="ignore")


@mistake(
    "tokenizer-encode_iterable_chunk_by_chunk",
    TM.Tokenizer,
    "encode_iterable",
    diagnosis="encode_iterable encoding each line on its own (a whitespace run across lines is split)",
)
def encode_iterable_chunk_by_chunk(self, iterable):
    for chunk in iterable:
        yield from self.encode(chunk)  # a pre-token across two lines is cut in two
