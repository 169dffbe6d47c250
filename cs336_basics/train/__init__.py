"""`cs336 train`: train a TransformerLM end to end with the components of this package.

config.py   TrainConfig: defaults, a TOML file, --key=value overrides (nanoGPT's style)
tokens.py   the corpus, the tokenizer (train_bpe) and the splits encoded into uint16 memmaps
loop.py     the loop: batches, loss, AdamW, schedule, clipping, evaluation, checkpoints, resume, DDP
metrics.py  metrics.jsonl and loss.png beside the checkpoints
cli.py      the command
"""
