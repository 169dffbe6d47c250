from cs336_basics.tokenizer.byte_unicode import to_printable
from cs336_basics.tokenizer.tokenizer import Tokenizer

import operator as _op

import tokenizers as _hf

_reference_init = Tokenizer.__init__


def _init(self, vocab, merges, special_tokens=None):
    _reference_init(self, vocab, merges, special_tokens)
    hf_vocab = {to_printable(b): i for b, i in self.id_of.items()}
    hf_merges = [(to_printable(a), to_printable(b)) for a, b in self.merges]
    self._hf_tokenize = _hf.models.BPE(hf_vocab, hf_merges).tokenize
    self._get_id = _op.attrgetter("id")


def _encode_pretoken(self, pretoken: str) -> list[int]:
    ids = [self.byte_ids[b] for b in pretoken.encode("utf-8")]
    if None in ids:
        missing = next(b for b in pretoken.encode("utf-8") if self.byte_ids[b] is None)
        raise ValueError(f"cannot encode {pretoken!r}: byte {missing:#04x} is not in the vocabulary")
    return list(map(self._get_id, next(map(self._hf_tokenize, [to_printable(pretoken.encode("utf-8"))]))))


Tokenizer.__init__ = _init
Tokenizer._encode_pretoken = _encode_pretoken
