"""A GGUF file's key/value metadata, read without its tensors (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
the magic b"GGUF", a uint32 version, uint64 tensor and key/value counts, then each pair as a
string key, a uint32 value type and the value (strings are a uint64 length and UTF-8 bytes,
arrays a uint32 item type, a uint64 count and the items). Little-endian, version 2 or 3.
gguf.GGUFReader parses every tensor's description too and wraps each string of a vocabulary in
a NumPy array, seconds for SmolLM2's 49,152 tokens; this reads the metadata alone."""

import mmap
import os
import struct

import numpy as np

# value type -> (struct format, NumPy dtype) of the fixed-size types; 8 is a string, 9 an array
_FIXED = {0: ("<B", "<u1"), 1: ("<b", "<i1"), 2: ("<H", "<u2"), 3: ("<h", "<i2"), 4: ("<I", "<u4"), 5: ("<i", "<i4"),
          6: ("<f", "<f4"), 7: ("<?", "?"), 10: ("<Q", "<u8"), 11: ("<q", "<i8"), 12: ("<d", "<f8")}  # fmt: skip
STRING, ARRAY = 8, 9


class _Cursor:
    """Reads values one after another from a buffer."""

    def __init__(self, buf):
        self.buf, self.at = buf, 0

    def fixed(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.buf, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        return self.strings(1)[0]

    def strings(self, count: int) -> list[str]:
        """`count` strings one after another (a vocabulary: one loop, no call per string)."""
        buf, at, out = self.buf, self.at, []
        length = struct.Struct("<Q").unpack_from
        for _ in range(count):
            (n,) = length(buf, at)
            out.append(buf[at + 8 : at + 8 + n].decode("utf-8"))
            at += 8 + n
        self.at = at
        return out

    def value(self, kind: int):
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            item, count = self.fixed("<I"), self.fixed("<Q")
            if item in _FIXED:
                dtype = np.dtype(_FIXED[item][1])
                items = np.frombuffer(self.buf, dtype, count, self.at).tolist()
                self.at += count * dtype.itemsize
                return items
            if item == STRING:
                return self.strings(count)
            return [self.value(item) for _ in range(count)]
        if kind not in _FIXED:
            raise ValueError(f"unknown GGUF value type {kind} at byte {self.at}")
        return self.fixed(_FIXED[kind][0])


def gguf_metadata(path: str | os.PathLike) -> dict:
    """{key: value} of every metadata pair of the GGUF file at `path` (arrays as lists); a file
    that is not GGUF version 2 or 3 raises ValueError."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        cursor = _Cursor(buf)
        if buf[:4] != b"GGUF" or struct.unpack_from("<I", buf, 4)[0] not in (2, 3):
            raise ValueError(f"{path} is not a GGUF file of version 2 or 3")
        cursor.at = 8
        cursor.fixed("<Q")  # the tensor count: the tensors are not read
        pairs = cursor.fixed("<Q")
        metadata = {}
        for _ in range(pairs):
            key = cursor.string()
            metadata[key] = cursor.value(cursor.fixed("<I"))
        return metadata
