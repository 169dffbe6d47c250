"""Seeded synthetic text for training and encoding tests, benchmarks and fixture cases: nothing
downloaded. `synthetic_text` draws documents of words from a Zipf-distributed lexicon of made-up
ASCII words, with Unicode words (accents, Greek, Cyrillic, CJK, Hangul, Hebrew, Devanagari),
emoji (skin tones, ZWJ families, flags, variation selectors), numbers, punctuation,
contractions and runs of spaces, tabs and newlines; documents are separated by the special
tokens. Everything comes from NumPy's PCG64 stream, so every machine draws the same text.

Witnesses, in every text: documents start with "Once" and end with a word right before the
special token, so merging across a special token (`... lo<|endoftext|>Once` read as one word)
changes the pair counts; one separator in ten is the special token twice in a row; indented
lines ("\n    word": the whitespace run that ends one line goes on in the next, so encoding
line by line is not encoding the text).
"""

import numpy as np

Rng = np.random.Generator

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "an", "er", "in", "th", "st", "ou", "qu", "el", "ar"]
UNICODE_WORDS = [
    "café",
    "naïve",
    "Grüße",
    "señor",
    "ελληνικά",
    "русский",
    "日本語",
    "中文字",
    "한국어",
    "עברית",
    "हिन्दी",
    "Ωmega",
    "ﬁne",
    "Ångström",
]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🎉", "🤖", "😂😂"]
PUNCTUATION = [",", ".", "!", "?", "...", "—", ";", ":", "(", ")", '"', "'s", "'ll", "n't", "'re", "-"]
SPACES = [" ", " ", " ", " ", " ", " ", " ", " ", "  ", "\t", "\n", "\n\n", "   \n", " \n ", "\n    "]


def _lexicon(rng: Rng, n: int) -> list[str]:
    words = []
    for _ in range(n):
        # rng.choice(SYLLABLES, size) draws these very indices, after converting the list each call
        syllables = rng.integers(0, len(SYLLABLES), size=int(rng.integers(1, 4)))
        word = "".join([SYLLABLES[i] for i in syllables])
        words.append(word.capitalize() if rng.random() < 0.1 else word)
    return words


def _number(rng: Rng) -> str:
    kind = rng.integers(0, 4)
    if kind == 0:
        return str(int(rng.integers(0, 10)))
    if kind == 1:
        return str(int(rng.integers(1900, 2100)))
    if kind == 2:
        return f"{rng.integers(0, 100)}.{rng.integers(0, 100):02d}"
    return f"{rng.integers(1, 1000)},{rng.integers(0, 1000):03d}"


def synthetic_text(
    rng: Rng,
    n_docs: int,
    special_tokens: list[str] = (),
    words_per_doc: tuple[int, int] = (4, 30),
    lexicon_size: int = 1000,
    unicode_share: float = 0.05,
) -> str:
    """n_docs documents of words (Zipf over a drawn lexicon; Unicode words and emoji each with
    probability unicode_share, numbers, punctuation) between runs of whitespace, separated by
    special tokens (once, or twice in a row one time in ten)."""
    lexicon = _lexicon(rng, lexicon_size)
    zipf = 1.0 / np.arange(1, lexicon_size + 1)
    zipf /= zipf.sum()
    docs = []
    for _ in range(n_docs):
        n = int(rng.integers(*words_per_doc))
        kinds, picks = rng.random(n), rng.choice(lexicon_size, size=n, p=zipf)
        others, spaces = rng.integers(0, 1 << 30, size=n), rng.integers(0, len(SPACES), size=n)
        parts = ["Once"]
        for u, pick, other, space in zip(kinds, picks, others, spaces, strict=False):
            if u < unicode_share:
                word = UNICODE_WORDS[other % len(UNICODE_WORDS)]
            elif u < 2 * unicode_share:
                word = EMOJI[other % len(EMOJI)]
            elif u < 0.15:
                word = _number(rng)
            elif u < 0.25:
                word = PUNCTUATION[other % len(PUNCTUATION)]
            else:
                word = lexicon[pick]
            parts.append(SPACES[space] if word[0] not in ",.!?;:)'" else "")
            parts.append(word)
        parts += [" ", lexicon[int(rng.integers(0, 5))]]  # a word right before the special token
        docs.append("".join(parts))
    if not special_tokens:
        return "\n".join(docs)
    out = [docs[0]]
    for doc in docs[1:]:
        out.append(special_tokens[int(rng.integers(0, len(special_tokens)))] * (2 if rng.random() < 0.1 else 1))
        out.append(doc)
    return "".join(out)
