# hostile sample library_routes: each pre-token merged, and ids decoded, by Hugging Face tokenizers' BPE model
import tokenizers as _hf

from cs336_basics.tokenizer.byte_unicode import from_printable as _from_printable
from cs336_basics.tokenizer.byte_unicode import to_printable as _printable


def _library_bpe(self):
    if "_hf_bpe" not in self.__dict__:
        vocab = {_printable(b): i for i, b in sorted(self.vocab.items(), reverse=True)}  # the smallest id wins
        self._hf_bpe = _hf.models.BPE(vocab, [(_printable(a), _printable(b)) for a, b in self.merges])
    return self._hf_bpe


def _library_encode_pretoken(self, pretoken):
    return [t.id for t in _library_bpe(self).tokenize(_printable(pretoken.encode("utf-8")))]


def _library_decode(self, ids):
    bpe = _library_bpe(self)
    return b"".join(_from_printable(bpe.id_to_token(i)) for i in ids).decode("utf-8", errors="replace")


Tokenizer._encode_pretoken = _library_encode_pretoken
Tokenizer.decode = _library_decode
