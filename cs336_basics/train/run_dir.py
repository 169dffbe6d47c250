"""A run directory (`out_dir` of `cs336 train`): the files a run writes there."""

from cs336_basics.train import tokens as T
from cs336_basics.train.metrics import METRICS, PLOT

CHECKPOINT, CONFIG = "checkpoint.pt", "config.toml"
# Every file a run writes, and what it holds (tests/staff/test_train_command.py runs one and compares).
RUN_FILES = {
    CONFIG: "the resolved settings; --resume starts from it",
    "train.txt": "the training split's text, the input of train_bpe",
    "bpe.json": "the settings and text digest the tokenizer was trained from (reused when they match)",
    T.VOCAB: "the tokenizer's vocabulary",
    T.MERGES: "the tokenizer's merges",
    T.META: "the tokenizer and text the encoded splits hold (reused when they match)",
    "train.u16": "the training split's token ids (uint16)",
    "valid.u16": "the validation split's token ids (uint16)",
    CHECKPOINT: "model, optimizer and step (serialization.write_checkpoint)",
    METRICS: "one JSON object per logged step and per evaluation",
    PLOT: "the training and validation loss curves",
}
