"""atomic_write: a write that fails part-way leaves the target as it was and no temporary beside it;
one that succeeds replaces the target whole. Every writer of the package goes through it."""

import ast
import os

import pytest

from cs336_basics import REPO
from cs336_basics.atomic_write import atomic_open, write_atomic


class Interrupted(Exception):
    pass


def test_atomic_write_replaces_the_target_with_bytes_and_text(tmp_path):
    target = tmp_path / "out.bin"
    write_atomic(target, b"old")
    write_atomic(target, "né\n")
    assert target.read_bytes() == "né\n".encode()
    assert os.listdir(tmp_path) == ["out.bin"]


@pytest.mark.parametrize("mode", ["wb", "w"])
def test_atomic_write_stream_failing_midway_leaves_target_and_no_temporary(tmp_path, mode):
    target = tmp_path / "out.csv"
    target.write_bytes(b"before")
    with pytest.raises(Interrupted), atomic_open(target, mode) as f:
        f.write(b"half" if mode == "wb" else "half")
        raise Interrupted
    assert target.read_bytes() == b"before"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_atomic_write_failing_to_encode_leaves_target_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("before")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "\udc80")  # a lone surrogate has no UTF-8 encoding
    assert target.read_text() == "before"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_atomic_write_fsync_writes_the_same_bytes(tmp_path):
    with atomic_open(tmp_path / "ckpt", fsync=True) as f:
        f.write(b"state")
    assert (tmp_path / "ckpt").read_bytes() == b"state"


def test_atomic_write_refuses_a_mode_that_is_not_a_whole_write(tmp_path):
    with pytest.raises(ValueError, match="mode must be one of .* got 'ab'"), atomic_open(tmp_path / "x", "ab"):
        pass


def test_atomic_write_is_the_only_rename_in_the_package():
    """os.replace / os.rename / Path.rename / Path.replace appear in atomic_write.py alone."""
    renames = []
    for path in (REPO / "cs336_basics").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("replace", "rename") and _is_rename(node):
                    renames.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert [r for r in renames if not r.startswith("cs336_basics/atomic_write.py")] == []


def _is_rename(call: ast.Call) -> bool:
    """os.replace(a, b) / os.rename(a, b), or x.rename(b) / x.replace(b) with one argument that is
    not a string (str.replace takes two)."""
    owner = call.func.value
    if isinstance(owner, ast.Name) and owner.id == "os":
        return True
    return call.func.attr == "rename" or (len(call.args) == 1 and not call.keywords)
