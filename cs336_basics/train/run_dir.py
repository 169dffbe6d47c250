"""A run directory (`out_dir` of `cs336 train`): the files a run writes there, and load_trained,
which reads a finished run back as (model, tokenizer) for `cs336 generate` and `cs336 evaluate`."""

import os
from pathlib import Path

from cs336_basics.nn.modules import TransformerLM
from cs336_basics.serialization import read_checkpoint
from cs336_basics.train import tokens as T
from cs336_basics.train.config import TrainConfig, read_toml
from cs336_basics.train.metrics import METRICS, PLOT

CHECKPOINT, CONFIG = "checkpoint.pt", "config.toml"
# Every file a run writes, and what it holds (the course staff's tests run one and compare).
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


def load_trained(run_dir: str | os.PathLike, device: str = "cpu"):
    """(model, tokenizer) of a run directory `cs336 train` wrote: config.toml, the tokenizer files
    and checkpoint.pt (cs336 generate --checkpoint DIR)."""
    from cs336_basics.corpus import EOT
    from cs336_basics.tokenizer.tokenizer import Tokenizer
    from cs336_basics.train.config import apply

    run_dir = Path(run_dir)
    for name in (CONFIG, T.VOCAB, T.MERGES, CHECKPOINT):
        if not (run_dir / name).is_file():
            raise FileNotFoundError(
                f"--checkpoint {os.fspath(run_dir)!r}: no {name} there (a cs336 train run directory)"
            )
    config = apply(TrainConfig(), read_toml(run_dir / CONFIG), os.fspath(run_dir / CONFIG))
    state = read_checkpoint(run_dir / CHECKPOINT)
    model = TransformerLM(config.model_config(), device=device)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as e:
        reason = " ".join(str(e).split())[:300]
        raise ValueError(f"{run_dir / CHECKPOINT} does not match {run_dir / CONFIG}: {reason}") from None
    model.eval()
    return model, Tokenizer.from_files(run_dir / T.VOCAB, run_dir / T.MERGES, [EOT])
