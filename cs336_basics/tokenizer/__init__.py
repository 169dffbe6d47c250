"""Byte-level BPE (Sennrich et al. 2016, "Neural Machine Translation of Rare Words with Subword
Units"; GPT-2's byte-level variant, Radford et al. 2019), one idea per module:

    pretokenize.py   special tokens first, then GPT-2's pre-tokenizer pattern; counting in chunks
    train_bpe.py     train_bpe(input_path, vocab_size, special_tokens) -> (vocab, merges)
    tokenizer.py     Tokenizer: encode, decode, encode_iterable, from_files
    byte_unicode.py  GPT-2's printable character for each byte (its vocab.json / merges.txt format)
    tensors.py       vocab, merges and text as tensors (the fixture files' encoding)
"""
