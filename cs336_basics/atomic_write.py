"""Files written whole or not at all: the data goes to a temporary name beside the target (the
writer's pid in it, so processes sharing a directory never share one), which is then renamed over
the target; a failed write leaves the target as it was and no temporary behind."""

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str) -> None:
    """`data` (bytes, or text written as UTF-8) to `path`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
