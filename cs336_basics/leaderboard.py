"""A leaderboard entry: a trained run's weights, configuration and tokenizer, in the folder
`leaderboard/` of the submission zip (`cs336 submit --checkpoint DIR` puts them there; the grader
evaluates them as `cs336 evaluate` does, with your model code). Weights travel as safetensors
(tensors and a JSON header: nothing is unpickled), checked against the configuration before any
tensor is read. An entry is bounded: at most MAX_PARAMETERS parameters (float32), a vocabulary
whose logits for one window fit the evaluation's batch, a context of at least EVAL_CONTEXT."""

import json
import math
import tomllib

from cs336_basics.evaluate import EVAL_CONTEXT, MAX_LOGITS

FOLDER = "leaderboard"
CONFIG, VOCAB, MERGES, WEIGHTS = "config.toml", "vocab.json", "merges.txt", "model.safetensors"
MAX_PARAMETERS = 5_000_000  # 20 MB of float32 weights
MAX_HEADER_BYTES = 1 << 20
MAX_BYTES = {CONFIG: 1 << 16, VOCAB: 1 << 22, MERGES: 1 << 22, WEIGHTS: 4 * MAX_PARAMETERS + 8 + MAX_HEADER_BYTES}
DTYPE = "F32"


class LeaderboardError(ValueError):
    """An entry the leaderboard cannot evaluate; the message says why."""


def state_dict_shapes(c) -> dict[str, tuple[int, ...]]:
    """The state-dict names and shapes of TransformerLM(c), read off the model built on the meta
    device (no storage): every setting of the TransformerLMConfig shapes them as it shapes training's."""
    from cs336_basics.nn.modules.transformer_lm import TransformerLM

    try:
        model = TransformerLM(c, device="meta")
    except Exception as e:  # noqa: BLE001 - the model code (a student's, in `cs336 submit`) could not build it
        message = " ".join(f"{type(e).__name__}: {e}".split())[:300]
        raise LeaderboardError(
            f"TransformerLM could not be built from {CONFIG} on the meta device: {message}"
        ) from None
    return {name: tuple(t.shape) for name, t in model.state_dict().items()}


def _check_size(n: int) -> None:
    if n > MAX_PARAMETERS:
        raise LeaderboardError(f"the model has {n:,} parameters; the leaderboard takes at most {MAX_PARAMETERS:,}")


def model_config(toml_text: bytes):
    """The TransformerLMConfig of a run's config.toml, within the leaderboard's bounds."""
    from cs336_basics.accounting.params import parameter_count
    from cs336_basics.train.config import TrainConfig, apply

    try:
        config = apply(TrainConfig(), tomllib.loads(toml_text.decode("utf-8")), CONFIG)
        config.check()
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as e:
        raise LeaderboardError(f"{CONFIG} is not a cs336 train configuration: {e}") from None
    c = config.model_config()
    # counted from the configuration before any model is built (a huge one would take long to build)
    _check_size(parameter_count(c))
    if c.vocab_size * EVAL_CONTEXT > MAX_LOGITS:
        raise LeaderboardError(f"vocab_size must be at most {MAX_LOGITS // EVAL_CONTEXT}, got {c.vocab_size}")
    if c.context_length < EVAL_CONTEXT:
        raise LeaderboardError(
            f"context_length must be at least {EVAL_CONTEXT} (the evaluation's), got {c.context_length}"
        )
    return c


def _header(raw: bytes) -> dict:
    if len(raw) < 8 or int.from_bytes(raw[:8], "little") > min(MAX_HEADER_BYTES, len(raw) - 8):
        raise LeaderboardError(
            f"{WEIGHTS} is not a safetensors file (truncated, or a pickle or torch.save file, which is never loaded)"
        )
    try:
        header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    except (ValueError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict):
        raise LeaderboardError(f"{WEIGHTS} is not a safetensors file (its header is not a JSON object)")
    header.pop("__metadata__", None)
    return header


def header_metadata(raw: bytes) -> dict:
    """The `__metadata__` of a safetensors file's header (empty if none)."""
    if len(raw) < 8 or int.from_bytes(raw[:8], "little") > min(MAX_HEADER_BYTES, len(raw) - 8):
        raise LeaderboardError("not a safetensors file")
    try:
        header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    except (ValueError, UnicodeDecodeError):
        raise LeaderboardError("not a safetensors file") from None
    meta = header.get("__metadata__", {}) if isinstance(header, dict) else {}
    return meta if isinstance(meta, dict) else {}


def read_weights(raw: bytes, shapes: dict[str, tuple[int, ...]]) -> dict:
    """The tensors of a safetensors file whose header names exactly `shapes`, each float32 of its
    shape and byte range; nothing is read before the header is checked."""
    import safetensors.torch

    header, data = _header(raw), len(raw) - 8 - int.from_bytes(raw[:8], "little")
    missing, extra = sorted(set(shapes) - set(header)), sorted(set(header) - set(shapes))
    if missing or extra:
        raise LeaderboardError(f"the weights do not match {CONFIG}: missing {missing[:3]}, unexpected {extra[:3]}")
    for name, entry in header.items():
        ok = isinstance(entry, dict) and entry.get("dtype") == DTYPE and entry.get("shape") == list(shapes[name])
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not ok:
            got = {k: entry.get(k) for k in ("dtype", "shape")} if isinstance(entry, dict) else entry
            raise LeaderboardError(
                f"{name} must be {DTYPE} of shape {list(shapes[name])} (as {CONFIG} says), got {got}"
            )
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= data and offsets[1] - offsets[0] == 4 * math.prod(shapes[name])):  # fmt: skip
            raise LeaderboardError(f"{name}: its byte range {offsets} does not hold a {list(shapes[name])} tensor")
    try:
        return safetensors.torch.load(raw)
    except Exception as e:  # noqa: BLE001 - any malformed file
        raise LeaderboardError(f"{WEIGHTS} could not be read: {type(e).__name__}") from None


def check_entry(files: dict[str, bytes]):
    """(TransformerLMConfig, weights) of an entry's files; LeaderboardError naming what is wrong."""
    for name in (CONFIG, VOCAB, MERGES, WEIGHTS):
        if name not in files:
            raise LeaderboardError(f"the entry has no {name}")
        if len(files[name]) > MAX_BYTES[name]:
            raise LeaderboardError(f"{name} holds {len(files[name]):,} bytes; at most {MAX_BYTES[name]:,}")
    c = model_config(files[CONFIG])
    shapes = state_dict_shapes(c)
    _check_size(sum(math.prod(s) for s in shapes.values()))  # the built model's own count, as well
    return c, read_weights(files[WEIGHTS], shapes)


def entry_files(run_dir) -> dict[str, bytes]:
    """An entry from a cs336 train run directory: its config and tokenizer, and its checkpoint's
    model weights as safetensors (the optimizer state is left out); checked as the grader checks it."""
    from pathlib import Path

    import safetensors.torch

    from cs336_basics.serialization import read_checkpoint

    run_dir = Path(run_dir)
    for name in (CONFIG, VOCAB, MERGES, "checkpoint.pt"):
        if not (run_dir / name).is_file():
            raise FileNotFoundError(f"--checkpoint {str(run_dir)!r}: no {name} there (a cs336 train run directory)")
    model = read_checkpoint(run_dir / "checkpoint.pt")["model"]
    weights = {k: v.detach().float().contiguous() for k, v in model.items()}
    files = {name: (run_dir / name).read_bytes() for name in (CONFIG, VOCAB, MERGES)}
    files[WEIGHTS] = safetensors.torch.save(weights)
    check_entry(files)
    return files
