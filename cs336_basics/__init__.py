from pathlib import Path

# The repository (or handout) root: fixtures/, tests/ and the package sit in it.
REPO = Path(__file__).resolve().parent.parent

# The graded components, in the order students build them. Every test's name carries one, so
# `uv run pytest -k <component>` selects that component's tests. Defined here, with no torch
# import, so that `cs336 --help` and `cs336 status` start at once.
COMPONENTS = (
    "linear",
    "embedding",
    "silu",
    "gelu",
    "softmax",
    "rmsnorm",
    "layernorm",
    "swiglu",
    "positionwise_ffn",
    "ffn_block",
    "attention",
    "rope",
    "mha",
    "block",
    "lm",
    "generate",
    "cross_entropy",
    "adamw",
    "lr_schedule",
    "gradient_clipping",
    "get_batch",
    "checkpoint",
    "train_bpe",
    "tokenizer",
    "parallel",
)
