"""The named shapes `cs336 account` reads (besides a `cs336 train` TOML file or run directory: its
command, cs336_basics/account_cli.py): GPT-2's sizes (Radford et al. 2019) as CS336's handout
gives them: vocabulary 50,257, context 1,024, d_ff = 4 d_model."""

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
