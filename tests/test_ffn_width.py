import pytest

from cs336_basics.nn import ffn_hidden_dim


@pytest.mark.parametrize(
    "d_model, multiple_of, multiplier, expected",
    [
        (128, 32, None, 352),  # the 8/3 rule: int(128 * 8/3) = 341 -> 352
        (2048, 256, None, 5632),  # TinyLlama-1.1B's config.json: 5461 -> 5632
        (4096, 256, None, 11008),  # Llama-2-7B
        (4096, 1024, 1.3, 14336),  # Llama-3-8B (Meta's llama3 FeedForward rule)
        (8192, 4096, 1.3, 28672),  # Llama-3-70B
        (16384, 4096, 1.2, 53248),  # Llama-3.1-405B
        (64, 64, None, 192),  # CS336 default: 170.7 -> 192
    ],
)
def test_ffn_width_pins_published_sizes(d_model, multiple_of, multiplier, expected):
    assert ffn_hidden_dim(d_model, multiple_of, multiplier) == expected


def test_ffn_width_rounds_up_not_by_modulo():
    # hidden 100, multiple_of 64 must give 128; rounding with `%` instead of ceiling division
    # gives 64 * (163 % 64) = 64 * 35. Our rule works on 8/3 * d_model, so d_model = 38 gives
    # 8 * 38 // 3 = 101 -> 128.
    assert ffn_hidden_dim(38, multiple_of=64) == 128


def test_ffn_width_keeps_exact_multiples():
    assert ffn_hidden_dim(96, multiple_of=256) == 256  # 8 * 96 / 3 = 256 exactly


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(d_model=0), "d_model"),
        (dict(d_model=64, multiple_of=0), "multiple_of"),
        (dict(d_model=64, ffn_dim_multiplier=-1.0), "ffn_dim_multiplier"),
    ],
    ids=["d_model", "multiple_of", "multiplier"],
)
def test_ffn_width_rejects_non_positive_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        ffn_hidden_dim(**kwargs)
