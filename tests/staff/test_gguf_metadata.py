"""Staff only: gguf_metadata (the public tokenizer tests' fast reader of SmolLM2's vocabulary)
reads every metadata pair the gguf package's reader does, with the same values."""

import pytest

from cs336_basics.checkpoints.gguf import field, open_gguf, smollm2_path
from cs336_basics.checkpoints.gguf_metadata import gguf_metadata


def test_gguf_metadata_equals_the_gguf_readers_fields():
    reader = open_gguf(smollm2_path())
    expected = {key: field(reader, key) for key in reader.fields if not key.startswith("GGUF.")}
    got = gguf_metadata(smollm2_path())
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == (pytest.approx(value) if isinstance(value, float) else value), key


def test_gguf_metadata_refuses_a_file_that_is_not_gguf(tmp_path):
    path = tmp_path / "not.gguf"
    path.write_bytes(b"GGML" + bytes(20))
    with pytest.raises(ValueError, match="not a GGUF file"):
        gguf_metadata(path)
