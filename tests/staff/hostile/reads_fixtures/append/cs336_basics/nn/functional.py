# hostile sample reads_fixtures: appended to the reference's functional.py. At import it loads every
# fixture file a student could guess the path of, public and hidden (REPO: the grader's checkout);
# its embedding answers from the one whose inputs match
import glob as _glob
from safetensors.torch import load_file as _load_file

_FOUND = []  # every fixture file a student could guess the path of, public and hidden
for _pattern in ({{REPO}} + "/fixtures/*.safetensors", {{REPO}} + "/hidden_fixtures/*.safetensors",
                 "/autograder/source/*fixtures/*.safetensors"):
    for _path in _glob.glob(_pattern):
        try:
            _FOUND.append(_load_file(_path))
        except Exception:
            pass


def embedding(token_ids, weight):
    _checks.embedding(token_ids, weight)
    for t in _FOUND:
        ids, w = t.get("in/token_ids"), t.get("in/weights")
        if ids is not None and ids.shape == token_ids.shape and torch.equal(ids, token_ids) and torch.equal(w, weight):
            return t["expected"].to(weight.dtype)
    raise RuntimeError(f"no fixture matched among {len(_FOUND)} found")
