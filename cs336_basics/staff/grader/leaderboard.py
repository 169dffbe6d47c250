"""The leaderboard: a submission's entry (leaderboard/ beside its package: cs336_basics/leaderboard.py)
evaluated as `cs336 evaluate` does, with the student's own model code run in the sandbox. The
grader reads the entry as data (bounded files, a safetensors header checked against the
configuration), tokenizes the validation split with its own Tokenizer, and writes one case per
batch of windows for the adapter leaderboard_transformer_lm, given the whole TransformerLMConfig
(every field, so no setting falls back to a default); workers return logits, and the grader sums
the losses (cs336_basics/evaluate.py). A probe window whose second half is changed must leave the
first half's logits as they were (a model that sees the tokens it predicts has no entry). Anything
wrong gives a message and no entry, never a crash."""

import dataclasses
import math
import os
import secrets
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from cs336_basics import evaluate as E
from cs336_basics import leaderboard as L
from cs336_basics import source_rule
from cs336_basics.staff.grader import protocol, sandbox, submission
from cs336_basics.staff.grader.config import GradingConfig
from cs336_basics.staff.grader.runner import Runner, read_worker_file
from cs336_basics.staff.grader.sanitize import clean, hide_paths
from cs336_basics.staff.reference import ADAPTER_CHECKS, ADAPTERS

CPU_S = 60  # CPU seconds of a worker for its share of the windows
ADAPTER = "leaderboard_transformer_lm"  # tests/adapters.py: TransformerLM(TransformerLMConfig(**config))
COMPONENT = "lm"  # the adapter's component (its workers' call recorder and limits)
# How far a logit before a change of later tokens may move, relative to the largest logit. Measured
# on a 4-step model (tests/staff/test_leaderboard.py's): the reference 0, a softmax shifted by the
# maximum over the masked keys too 2.1e-7 (float32 rounding), attention without the causal mask 0.28.
CAUSAL_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Entry:
    """A leaderboard result: the loss and bits per byte, or None and why not."""

    nats_per_token: float | None
    bits_per_byte: float | None
    message: str

    def gradescope(self) -> list[dict] | None:
        if self.nats_per_token is None:
            return None
        return [{"name": "validation loss (nats/token)", "value": float(E.shown(self.nats_per_token)), "order": "asc"},
                {"name": "bits per byte", "value": float(E.shown(self.bits_per_byte)), "order": "asc"}]  # fmt: skip


def _bounded(name: str, size: int) -> None:
    if size > L.MAX_BYTES[name]:
        raise L.LeaderboardError(f"{name} holds {size:,} bytes; at most {L.MAX_BYTES[name]:,}")


def _from_zip(path: Path) -> dict[str, bytes] | None:
    with submission._open_zip(path) as archive:
        members = [(m, submission._member_path(m)) for m in archive.infolist()]
        prefix = (*submission._package_prefix(members), L.FOLDER)
        found = {p[-1]: m for m, p in members if p[:-1] == prefix and p[-1] in L.MAX_BYTES and not m.is_dir()}
        if not found:
            return None
        files = {}
        for name, m in found.items():
            _bounded(name, m.file_size)
            with archive.open(m) as f:
                files[name] = f.read(L.MAX_BYTES[name] + 1)
            _bounded(name, len(files[name]))
        return files


def _from_directory(folder: Path) -> dict[str, bytes] | None:
    if not folder.is_dir() or folder.is_symlink():
        return None
    files = {}
    for name in L.MAX_BYTES:
        try:
            info = os.lstat(folder / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise L.LeaderboardError(f"{name} is not a regular file (links are not accepted)")
        _bounded(name, info.st_size)
        files[name] = (folder / name).read_bytes()[: L.MAX_BYTES[name] + 1]
    return files or None


def read_entry(sub: Path, scratch: Path) -> dict[str, bytes] | None:
    """The entry's files beside the submission's package, or None if it has none."""
    if sub.is_file() and zipfile.is_zipfile(sub):
        return _from_zip(sub)
    package = submission.unpack(sub, scratch)
    if package.is_relative_to(scratch):  # a directory holding one zip: the entry is in that zip
        zips = sorted(p for p in sub.iterdir() if p.suffix.lower() == ".zip" and p.is_file())
        return _from_zip(zips[0])
    return _from_directory(package.parent / L.FOLDER)


def validation_ids(files: dict[str, bytes], vocab_size: int, private: Path) -> tuple[list[int], dict[int, bytes]]:
    """The validation split encoded with the grader's Tokenizer on the entry's vocabulary and merges."""
    from cs336_basics.tokenizer.tokenizer import Tokenizer
    from cs336_basics.train.config import EOT

    (private / L.VOCAB).write_bytes(files[L.VOCAB])
    (private / L.MERGES).write_bytes(files[L.MERGES])
    try:
        tokenizer = Tokenizer.from_files(private / L.VOCAB, private / L.MERGES, [EOT])
    except Exception as e:  # noqa: BLE001 - any malformed tokenizer file
        raise L.LeaderboardError(
            f"the tokenizer ({L.VOCAB}, {L.MERGES}) could not be read: {clean(str(e), 300)}"
        ) from None
    if max(tokenizer.vocab) >= vocab_size:
        raise L.LeaderboardError(f"the tokenizer has ids up to {max(tokenizer.vocab)}; vocab_size is {vocab_size}")
    return E.validation_ids(tokenizer), tokenizer.vocab


def _prepare(sub: Path, base: Path) -> Path:
    """The sandbox directory: code/ (the submission's package and the grader's adapters.py and
    adapter_checks.py), inputs/."""
    root = base / secrets.token_hex(16)
    (root / "inputs").mkdir(parents=True)
    submission.copy_package(submission.unpack(sub, base / "private" / "submission"), root / "code" / "cs336_basics")
    shutil.copyfile(ADAPTERS, root / "code" / "adapters.py")
    shutil.copyfile(ADAPTER_CHECKS, root / "code" / "adapter_checks.py")
    for here, _, files in os.walk(root):
        os.chmod(here, 0o755)
        for name in files:
            os.chmod(os.path.join(here, name), 0o644)
    return root


def _read_logits(path: Path, uid: int | None, shape: tuple[int, ...], code_dir: Path) -> torch.Tensor:
    """A worker's logits for one batch: a float32 tensor of `shape`, or LeaderboardError saying why not."""
    limit = 8 + L.MAX_HEADER_BYTES + 4 * math.prod(shape)
    raw = read_worker_file(path, uid, limit=limit + 1)
    if raw is None or len(raw) > limit:
        raise L.LeaderboardError(f"{ADAPTER} saved no output of the expected size for a batch of validation windows")
    try:
        meta = L.header_metadata(raw)
        if protocol.ERROR in meta:
            error = clean(hide_paths(str(meta[protocol.ERROR]), code_dir), 1500).rstrip()
            raise L.LeaderboardError(f"{ADAPTER} raised an exception on the validation windows:\n{error}")
        return L.read_weights(raw, {protocol.OUTPUT: shape})[protocol.OUTPUT]
    except L.LeaderboardError as e:
        if "raised an exception" in str(e):
            raise
        raise L.LeaderboardError(f"{ADAPTER} must return float32 logits of shape {list(shape)}") from None


def _run_windows(root: Path, private: Path, inputs: list, kwargs: dict, config: GradingConfig, budget_end,
                 reduce) -> list:  # fmt: skip
    """reduce(i, logits of inputs[i]) for every batch of windows, each batch's logits dropped once
    reduced; from workers each given as many batches as half its home holds."""
    limits = dataclasses.replace(config.limits, cpu_per_component_s=CPU_S)
    cases = []
    for i, x in enumerate(inputs):
        name = f"leaderboard_{i}"
        torch.save({**kwargs, "in_indices": x.clone()}, root / "inputs" / protocol.input_file(name))
        os.chmod(root / "inputs" / protocol.input_file(name), 0o644)
        cases.append((name, (*x.shape, kwargs["config"]["vocab_size"])))
    per_worker = max(1, (limits.disk_mb << 20) // 2 // (4 * max(math.prod(s) for _, s in cases)))
    reduced = []
    for k in range(0, len(cases), per_worker):
        chunk, name = cases[k : k + per_worker], f"leaderboard-{k}"
        (root / name).mkdir(mode=0o755)
        (root.parent / f"new-root-{name}").mkdir(mode=0o755)
        spec = sandbox.plan(root, root, root.parent / f"new-root-{name}", limits, config.isolate)
        runner = Runner(root / name, private, root / "code", root / "inputs", spec, reveal=True,
                        starts_processes=config.starts_processes)  # fmt: skip
        try:
            run = runner.run([(COMPONENT, [(case, ADAPTER) for case, _ in chunk])], budget_end)[COMPONENT]
            if not run.finished:
                raise L.LeaderboardError(f"your model did not finish the validation windows: {run.message}")
            for i, (case, shape) in enumerate(chunk, start=k):
                reduced.append(
                    reduce(i, _read_logits(run.home / protocol.output_file(case), spec.uid, shape, root / "code"))
                )
        finally:
            sandbox.unmount_under(root / name)
    return reduced


def causality_probe(window: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """The window (1, T) with its second half's tokens changed (each id + 1, modulo vocab_size)."""
    probe, half = window.clone(), window.shape[-1] // 2
    probe[:, half:] = (probe[:, half:] + 1) % vocab_size
    return probe


def check_causal(logits: torch.Tensor, probe_logits: torch.Tensor) -> None:
    """LeaderboardError if changing the second half of a window moved a logit of its first half by
    more than CAUSAL_TOLERANCE of the largest logit: the model saw the tokens it predicts."""
    half = logits.shape[-2] // 2
    a, b = logits[..., :half, :].double(), probe_logits[..., :half, :].double()
    if not torch.isfinite(a).all() or (a - b).abs().max() > CAUSAL_TOLERANCE * a.abs().max().clamp_min(1.0):
        raise L.LeaderboardError(
            "your model's logits at a position changed when only later tokens changed: it is not causal "
            "(it sees the tokens it predicts), so its loss is not a language model's"
        )


def _evaluate(sub: Path, base: Path, config: GradingConfig, budget_end) -> Entry:
    private = base / "private"
    files = read_entry(sub, private / "scan")
    if files is None:
        return Entry(None, None, "no leaderboard entry (`uv run cs336 submit --checkpoint DIR` adds one)")
    c, weights = L.check_entry(files)
    ids, vocab = validation_ids(files, c.vocab_size, private)
    parts = E.batches(ids, c.vocab_size)
    window = parts[0][0][:1]
    inputs = [x for x, _ in parts] + [window, causality_probe(window, c.vocab_size)]
    kwargs = {"config": dataclasses.asdict(c), "weights": weights}

    def reduce(i: int, logits: torch.Tensor) -> torch.Tensor:  # a probe's logits are kept, a batch's losses
        return E.token_losses(logits, parts[i][1]) if i < len(parts) else logits

    *losses, first, probe = _run_windows(_prepare(sub, base), private, inputs, kwargs, config, budget_end, reduce)
    check_causal(first, probe)
    result = E.summarise(losses, [y for _, y in parts], vocab)
    return Entry(result.nats_per_token, result.bits_per_byte,
                 f"leaderboard: validation loss {E.shown(result.nats_per_token)} nats/token, "
                 f"{E.shown(result.bits_per_byte)} "
                 f"bits/byte ({result.tokens:,} tokens, context {E.EVAL_CONTEXT})")  # fmt: skip


def evaluate_entry(
    sub: Path, config: GradingConfig, budget_end: float | None = None, notes: list | None = None
) -> Entry | None:
    """The submission's leaderboard result; a message and no values when it has no usable entry;
    None when the submission itself cannot be read (the grading says why)."""
    base = Path(tempfile.mkdtemp(prefix="cs336-leaderboard-"))
    try:
        os.chmod(base, 0o711)
        (base / "private").mkdir(mode=0o700)
        return _evaluate(Path(sub), base, config, budget_end)
    except submission.SubmissionError:
        return None
    except (L.LeaderboardError, ValueError) as e:
        return Entry(None, None, f"no leaderboard entry: {e}")
    except Exception:  # noqa: BLE001 - a grader bug must not stop results.json
        if notes is not None:
            notes.append("leaderboard evaluation failed:\n" + source_rule.format_exc(limit=-3))
        return Entry(None, None, "no leaderboard entry: the grader failed evaluating it; course staff have the details")
    finally:
        shutil.rmtree(base, ignore_errors=True)
