"""The FFN width rule, as a pure function of the model width.

Meta's Llama FeedForward (llama3 `model.py`, `FeedForward.__init__`) starts from hidden = 4 * dim, keeps 2/3 of it (so
that the three matrices of SwiGLU cost what two matrices of a 4x FFN would: 8/3 * dim),
optionally scales by `ffn_dim_multiplier`, then rounds *up* to a multiple of `multiple_of`
with integer ceiling division, multiple_of * ceil(hidden / multiple_of), as Meta's code does
(a `%`-based rounding is a common mistake). With no multiplier this is the plain 8/3 rule of
Shazeer (2020) and of CS336 (d_ff ~ 8/3 d_model, a multiple of 64).

Pinned examples (tests/test_ffn_width.py):
    ffn_hidden_dim(128, multiple_of=32)                             == 352    (the 8/3 rule)
    ffn_hidden_dim(2048, multiple_of=256)                           == 5632   (TinyLlama-1.1B's config.json)
    ffn_hidden_dim(4096, multiple_of=1024, ffn_dim_multiplier=1.3)  == 14336  (Llama-3-8B)
"""


def ffn_hidden_dim(d_model: int, multiple_of: int = 64, ffn_dim_multiplier: float | None = None) -> int:
    """d_ff = round_up(int(m * floor(2 * 4 * d_model / 3)), multiple_of), m = ffn_dim_multiplier or 1."""
    for name, value in (("d_model", d_model), ("multiple_of", multiple_of)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if ffn_dim_multiplier is not None and not ffn_dim_multiplier > 0:
        raise ValueError(f"ffn_dim_multiplier must be > 0 or None, got {ffn_dim_multiplier!r}")
    hidden = 2 * (4 * d_model) // 3  # int(2 * hidden_dim / 3) with hidden_dim = 4 * dim, in integers
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)
