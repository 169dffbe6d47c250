"""GPT-2's printable stand-in for each byte (openai/gpt-2 src/encoder.py, `bytes_to_unicode`):
the vocab.json / merges.txt format of GPT-2 and of Hugging Face's byte-level BPE writes every
token's bytes as these characters, so that a token is a printable string without spaces."""

import codecs
import functools
import itertools


@functools.cache
def byte_to_char() -> dict[int, str]:
    """Printable Latin-1 bytes map to themselves; the other 68 to chr(256), chr(257), ... in order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@functools.cache
def _charmap() -> tuple[str, object]:
    """The stand-ins as the tables of the codecs module's charmap codec (the one of cp1252 and other
    one-byte encodings): for decoding, the 256 stand-ins in byte order; for encoding, its inverse."""
    decoding = "".join(byte_to_char()[b] for b in range(256))
    return decoding, codecs.charmap_build(decoding)


def to_printable(token: bytes) -> str:
    return codecs.charmap_decode(token, "strict", _charmap()[0])[0]


def from_printable(text: str) -> bytes:
    """The bytes a GPT-2-format token string stands for; ValueError on a character no byte maps to."""
    try:
        return codecs.charmap_encode(text, "strict", _charmap()[1])[0]
    except UnicodeEncodeError as e:
        bad = e.object[e.start]
        raise ValueError(f"{text!r} is not a GPT-2 byte-level token: {bad!r} stands for no byte") from None


def _split(joined, parts: list) -> list:
    """`joined` cut into pieces as long as each of `parts`, in order."""
    return [joined[a:b] for a, b in itertools.pairwise(itertools.accumulate(map(len, parts), initial=0))]


def to_printable_many(tokens: list[bytes]) -> list[str]:
    """[to_printable(t) for t in tokens], in one call of the codec (a stand-in is one character per byte)."""
    return _split(to_printable(b"".join(tokens)), tokens)


def from_printable_many(texts: list[str]) -> list[bytes]:
    """[from_printable(t) for t in texts], in one call of the codec; ValueError as from_printable's."""
    try:
        joined = codecs.charmap_encode("".join(texts), "strict", _charmap()[1])[0]
    except UnicodeEncodeError:
        return [from_printable(t) for t in texts]  # raises, naming the first bad token
    return _split(joined, texts)
