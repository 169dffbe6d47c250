"""Text from a worker (error texts, its output's tail, import errors, sandbox notes) is data the
student's code chose. Before it goes into a message, results.json or the console it is made
plain and short: terminal escape sequences, control characters (newlines and tabs kept),
bidirectional overrides and lone surrogates removed, its length capped.

Caps: MAX_TEXT_CHARS per worker text, MAX_OUTPUT_CHARS per test's output in results.json and
MAX_TOTAL_CHARS for all tests' outputs together (report.py), so results.json stays under
report.MAX_RESULTS_BYTES.
"""

import re

MAX_TEXT_CHARS = 2000  # one worker text: an error, an import error, an output tail
MAX_OUTPUT_CHARS = 4000  # one test's output in results.json
MAX_TOTAL_CHARS = 100_000  # all tests' outputs in results.json

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and any other two-character escape
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
# C0 and C1 controls but \t and \n, DEL, bidirectional controls, lone surrogates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def clean(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """text without escapes, controls (but newline and tab) or surrogates, at most `limit`
    characters (the end kept: a traceback's last lines say what went wrong)."""
    text = _UNSAFE.sub("", _ESCAPES.sub("", text.replace("\r\n", "\n")))
    if len(text) > limit:
        cut = f"[{len(text) - limit + 40} characters cut]\n"
        text = cut + text[-(limit - len(cut)) :]
    return text


def decode(raw: bytes | None, limit: int = MAX_TEXT_CHARS) -> str:
    """Bytes a worker wrote, as clean text ('' for None)."""
    return clean((raw or b"").decode("utf-8", errors="replace"), limit)
