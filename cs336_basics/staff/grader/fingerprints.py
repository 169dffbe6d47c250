"""copydetect's code fingerprints with a hash that is the same in every process.

copydetect (utils.hashed_kgrams) hashes each k-gram with Python's hash(), which is salted per
process (PYTHONHASHSEED): winnowing keeps the smallest hash of each window, so which k-grams
become fingerprints, and with them the scores and the flagged pairs, changed from run to run.
Here each k-gram is hashed with BLAKE2b (hashlib, 8 bytes): the same fingerprints in every run.

    stable_hashes(text, k)                    -> the hash of every k-gram of text, in order
    fingerprint(path, k, window, boilerplate) -> a copydetect CodeFingerprint of the file
"""

import hashlib


def stable_hashes(text: str, k: int):
    """The 64-bit BLAKE2b hash of each of text's k-character windows, as a numpy int64 array."""
    import numpy as np

    grams = (text[i : i + k].encode("utf-8") for i in range(len(text) - k + 1))
    digests = (hashlib.blake2b(g, digest_size=8).digest() for g in grams)
    return np.array([int.from_bytes(d, "little", signed=True) for d in digests], dtype=np.int64)


def _winnowed(filtered: str, k: int, window: int, boilerplate) -> tuple[set, dict]:
    """copydetect's get_document_fingerprints with stable_hashes: (hashes, hash -> indexes)."""
    import numpy as np
    from copydetect.utils import winnow

    hashes, idx = winnow(stable_hashes(filtered, k), window_size=window, remove_duplicates=False)
    if len(boilerplate) > 0:
        _, overlap, _ = np.intersect1d(hashes, boilerplate, return_indices=True, assume_unique=True)
        hashes, idx = np.delete(hashes, overlap), np.delete(idx, overlap)
    where: dict = {}
    for h, i in zip(hashes, idx, strict=True):
        where.setdefault(h, []).append(i)
    return set(hashes), where


def fingerprint(path: str, k: int, window: int, boilerplate=(), language: str = "python"):
    """What copydetect's CodeFingerprint(path, k, window, boilerplate, True, language) holds, its
    k-grams hashed with stable_hashes."""
    from copydetect.detector import CodeFingerprint
    from copydetect.utils import filter_code, get_token_coverage

    with open(path, encoding="utf-8") as f:
        code = f.read()
    filtered, offsets = filter_code(code, path, language)
    fp = CodeFingerprint.__new__(CodeFingerprint)
    fp.hashes, fp.hash_idx = _winnowed(filtered, k, window, boilerplate)
    fp.filename, fp.raw_code, fp.filtered_code, fp.offsets, fp.k = path, code, filtered, offsets, k
    fp.token_coverage = get_token_coverage(fp.hash_idx, k, len(filtered))
    return fp
