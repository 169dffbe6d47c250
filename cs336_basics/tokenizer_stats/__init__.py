"""Tokenizer experiments (CS336 assignment 1, `tokenizer_experiments` and `train_bpe_tinystories`)
on your train_bpe and Tokenizer: compression in bytes per token, one corpus through another
corpus's tokenizer, encoding throughput, the longest tokens, and where train_bpe's time goes.

phases.py  train_bpe's steps run one by one and timed: pre-tokenization, counting, merging
measure.py documents sampled from a corpus; bytes per token, bytes per CPU second, longest tokens
cli.py     `cs336 tokenizer-stats`
"""
