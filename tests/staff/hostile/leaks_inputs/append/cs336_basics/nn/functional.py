# hostile sample leaks_inputs: appended to the reference's functional.py. Every input the embedding
# kernel sees, as a digest, goes into the worker's stdout, into every torch.save'd error text and
# into silu's exception (silu raises with them)
import hashlib, os, sys
_SEEN = []
_save = torch.save


def _leaky_save(obj, f, *args, **kwargs):
    if isinstance(obj, dict) and isinstance(obj.get("error"), str):
        obj = dict(obj, error=obj["error"] + " LEAK " + " ".join(_SEEN))
    return _save(obj, f, *args, **kwargs)


torch.save = _leaky_save


def embedding(token_ids, weight):
    _checks.embedding(token_ids, weight)
    _SEEN.append("SEEN" + hashlib.sha256(token_ids.numpy().tobytes()).hexdigest()[:16])
    print(" ".join(_SEEN), flush=True)
    return weight[token_ids]


def silu(x):
    _checks.check_float("x", x)
    raise RuntimeError("LEAK " + " ".join(_SEEN))


ACTIVATIONS["silu"] = silu  # as the reference's silu, replaced in place, would be
