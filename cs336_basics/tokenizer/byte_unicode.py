"""GPT-2's printable stand-in for each byte (openai/gpt-2 src/encoder.py, `bytes_to_unicode`):
the vocab.json / merges.txt format of GPT-2 and of Hugging Face's byte-level BPE writes every
token's bytes as these characters, so that a token is a printable string without spaces."""

import functools


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
def char_to_byte() -> dict[str, int]:
    return {c: b for b, c in byte_to_char().items()}


def to_printable(token: bytes) -> str:
    table = byte_to_char()
    return "".join(table[b] for b in token)


def from_printable(text: str) -> bytes:
    """The bytes a GPT-2-format token string stands for; ValueError on a character no byte maps to."""
    table = char_to_byte()
    try:
        return bytes(table[c] for c in text)
    except KeyError as e:
        raise ValueError(f"{text!r} is not a GPT-2 byte-level token: {e.args[0]!r} stands for no byte") from None
