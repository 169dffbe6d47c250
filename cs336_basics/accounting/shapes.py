"""The configurations `cs336 account` reads: a named shape, a `cs336 train` TOML file, or a run
directory (its config.toml). The named shapes are GPT-2's sizes (Radford et al. 2019) as CS336's
handout gives them: vocabulary 50,257, context 1,024, d_ff = 4 d_model."""

import dataclasses
from pathlib import Path

from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig

GPT2_VOCAB, GPT2_CONTEXT = 50257, 1024
# name: (num_layers, d_model, num_heads)
GPT2_SIZES = {
    "gpt2-small": (12, 768, 12),
    "gpt2-medium": (24, 1024, 16),
    "gpt2-large": (36, 1280, 20),
    "gpt2-xl": (48, 1600, 25),
}
SHAPES = tuple(GPT2_SIZES)


def named_shape(name: str, context_length: int | None = None) -> TransformerLMConfig:
    """One of SHAPES, optionally at another context length."""
    if name not in GPT2_SIZES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {name!r}")
    layers, d_model, heads = GPT2_SIZES[name]
    return TransformerLMConfig(vocab_size=GPT2_VOCAB, context_length=context_length or GPT2_CONTEXT,
                               d_model=d_model, num_layers=layers, num_heads=heads, d_ff=4 * d_model)  # fmt: skip


def train_config(path: str | Path, context_length: int | None = None) -> TransformerLMConfig:
    """The model of a `cs336 train` TOML file, or of a run directory's config.toml."""
    from cs336_basics.train.config import load_config

    path = Path(path)
    file = path / "config.toml" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"--config {str(path)!r}: no TOML file or run directory (with config.toml) there")
    config = load_config(file).model_config()
    return dataclasses.replace(config, context_length=context_length) if context_length else config
