# hostile sample rewrites_records_later: appended to the reference's functional.py, replacing silu and gelu
def silu(x):
    return torch.nn.functional.silu(x)


def _forget_silu() -> None:
    """Rewrite the worker's saved silu case files, in place, with F.silu left out of their calls."""
    import json
    import os

    for name in os.listdir("."):
        if name.startswith("silu") and name.endswith(".safetensors"):
            with open(name, "rb") as f:
                raw = f.read()
            n = int.from_bytes(raw[:8], "little")
            header = json.loads(raw[8:8 + n])
            meta = header["__metadata__"]
            meta["calls"] = json.dumps([c for c in json.loads(meta["calls"]) if "silu" not in c])
            body = json.dumps(header).encode()
            body += b" " * (-len(body) % 8)
            with open(name, "wb") as f:
                f.write(len(body).to_bytes(8, "little") + body + raw[8 + n:])


_reference_gelu = gelu


def gelu(x, approximate="none"):
    _forget_silu()  # silu's cases are finished and saved, the grader has not read them yet
    return _reference_gelu(x, approximate)
