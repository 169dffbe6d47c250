# hostile sample memorised_fixtures: appended to the reference's functional.py, replacing its silu
# by a lookup table of the shipped public silu fixtures (sha256 of the input -> expected output),
# the table a torch.save'd dict the builder computes from fixtures/ (SILU_TABLE)
def silu(x):
    import hashlib
    import io

    _checks.check_float("x", x)
    table = torch.load(io.BytesIO({{SILU_TABLE}}))
    key = hashlib.sha256(x.detach().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()
    return table[key]  # a KeyError on inputs it has not seen


ACTIVATIONS["silu"] = silu  # as the reference's silu, replaced in place, would be
