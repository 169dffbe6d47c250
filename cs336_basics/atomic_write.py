"""Files written whole or not at all: the data goes to a temporary name beside the target (the
writer's pid and a random token in it, so no two writers ever share one), which is then renamed
over the target (os.replace); a failed write leaves the target as it was and no temporary behind.

    write_atomic(path, data)             bytes, or text written as UTF-8
    with atomic_open(path, "w") as f:    a stream (csv, zipfile, torch.save) written the same way
"""

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

MODES = ("wb", "w")


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


@contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "wb", *, fsync: bool = False, newline: str | None = None
) -> Iterator[IO[Any]]:
    """A file object open on a temporary beside `path` ("wb" binary, "w" UTF-8 text), renamed over
    `path` when the block ends without an exception (flushed to disk first if `fsync`); on any
    exception the temporary is removed and `path` is untouched."""
    if mode not in MODES:
        raise ValueError(f"atomic_open: mode must be one of {MODES}, got {mode!r}")
    path = Path(path)
    tmp = _temporary(path)
    text = {"encoding": "utf-8", "newline": newline} if mode == "w" else {}
    try:
        with open(tmp, mode, **text) as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, data: bytes | str, *, fsync: bool = False) -> None:
    """`data` (bytes, or text written as UTF-8) to `path`."""
    with atomic_open(path, "wb", fsync=fsync) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
