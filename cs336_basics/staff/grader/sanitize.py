"""Text from a worker (error texts, its output's tail, import errors, sandbox notes) is data the
student's code chose. Before it goes into a message, results.json or the console it is made
plain and short: terminal escape sequences, control characters (newlines and tabs kept),
bidirectional overrides and lone surrogates removed, its length capped, and no host path left
(hide_paths: the grader applies it to every worker text that can reach a student, whatever
route it took: an exception's text, the tail of the worker's output, an import error).

Caps: MAX_TEXT_CHARS per worker text, MAX_OUTPUT_CHARS per test's output in results.json and
MAX_TOTAL_CHARS for all tests' outputs together (report.py), so results.json stays under
report.MAX_RESULTS_BYTES.
"""

import os
import re
import sys

from cs336_basics import REPO

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


# (host path, what a student sees instead): the grader's repository, Python's and the
# virtualenv's prefixes (as given and resolved)
_HOST_PATHS = {(str(REPO), "<grader>")} | {
    (p.rstrip("/"), "<python>")
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix)
    for p in (prefix, os.path.realpath(prefix))
    if p.rstrip("/")
}


def hide_paths(text: str, code_dir: str | os.PathLike) -> str:
    """text with no host path: paths in the sandbox's code directory relative to it (as a
    student's files are named in the handout: cs336_basics/...), the rest of the sandbox
    directory (its parent: inputs, the workers' homes) <sandbox>, the grader's repository
    <grader>, Python's prefixes <python>; the longest path first, so one inside another goes whole."""
    pairs = set(_HOST_PATHS)
    for code in {str(code_dir).rstrip("/"), os.path.realpath(code_dir)}:
        pairs.add((code + "/", ""))
        if os.path.dirname(code).rstrip("/"):
            pairs.add((os.path.dirname(code), "<sandbox>"))
    for path, name in sorted(pairs, key=lambda p: -len(p[0])):
        text = text.replace(path, name)
    return text
