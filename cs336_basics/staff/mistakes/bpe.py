"""BPE mistakes (train_bpe, tokenizer; cs336_basics/tokenizer): plausible wrong training and
encoding, each registered by @mistake right above its function."""

import collections

import regex

import cs336_basics.tokenizer.pretokenize as P
import cs336_basics.tokenizer.tokenizer as TM
import cs336_basics.tokenizer.train_bpe as B

from . import mistake

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
