"""The training run's configuration: one dataclass, read from a TOML file and overridden on the
command line, nanoGPT's style (Karpathy, nanoGPT `configurator.py`: a config file, then
`--key=value` arguments on top). The run directory keeps the resolved configuration in
`config.toml`; `--resume` starts from it.

The defaults fit a laptop CPU: on a 2-core CPU the reference reaches validation loss <= 3.3 on
the course corpus (cs336_basics/corpus) within 15 minutes (3.15 after the 600 steps, 12.9 CPU
minutes on one thread; handout/README.md, "Training your model")."""

import dataclasses
import inspect
import math
import os
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from cs336_basics.corpus import EOT


@dataclass
class TrainConfig:
    # where (train/run_dir.py RUN_FILES lists what a run writes there) and what it learns from
    out_dir: str = "runs/default"  # the run directory
    corpus: str = ""  # "" the project's corpus; else a UTF-8 text file of documents and <|endoftext|>
    valid_fraction: float = 0.05  # the fraction of the corpus held out for validation (its end)
    # the tokenizer: trained with train_bpe on the training text, unless vocab/merges files are given
    vocab_size: int = 2048  # the tokenizer's vocabulary: 256 bytes, <|endoftext|>, then merges
    vocab_path: str = ""  # a vocab.json to use instead of training a tokenizer (with merges_path)
    merges_path: str = ""  # a merges.txt to use instead of training a tokenizer (with vocab_path)
    # the model (TransformerLMConfig's fields)
    context_length: int = 128  # tokens per training sequence, the longest context
    d_model: int = 128  # the residual stream's width
    num_layers: int = 4  # Transformer blocks
    num_heads: int = 4  # attention heads per block (d_model / num_heads even: RoPE)
    d_ff: int = 384  # the feed-forward network's inner width
    rope_theta: float = 10000.0  # RoPE's base (Theta)
    norm_eps: float = 1e-5  # the norms' epsilon (RMSNorm / LayerNorm), inside the square root
    # the ablations (TransformerLMConfig): pre / post / none; rope / none (NoPE); swiglu / silu
    norm: str = "pre"  # pre / post / none: where the RMSNorms sit
    position: str = "rope"  # rope / none (NoPE)
    ffn: str = "swiglu"  # swiglu / silu (no gate)
    norm_type: str = "rmsnorm"  # the norms' kind: a name in nn/modules/registry.py's NORMS
    # the optimisation: AdamW, the cosine schedule with warm-up, gradient clipping
    batch_size: int = 32  # the global batch, split across processes under torchrun
    max_steps: int = 600  # optimizer steps of the run
    max_lr: float = 3e-3  # the learning rate after warm-up
    min_lr: float = 3e-4  # the learning rate at the end of the cosine cycle and after
    warmup_steps: int = 50  # steps of linear warm-up from 0 to max_lr
    cosine_cycle_steps: int = 0  # the step the cosine decay reaches min_lr; 0: max_steps
    weight_decay: float = 0.1  # AdamW's decoupled weight decay
    beta1: float = 0.9  # AdamW's decay of the first moment
    beta2: float = 0.95  # AdamW's decay of the second moment
    adamw_eps: float = 1e-8  # AdamW's epsilon, in the update's denominator (not the norms': norm_eps)
    max_grad_norm: float = 1.0  # gradients clipped to this global L2 norm
    diverge_loss: float = 0.0  # a training loss NaN, inf or above this stops the run (0: 2 ln(vocab_size))
    # evaluation, logging and checkpoints, every so many steps
    eval_interval: int = 100  # steps between validation losses
    eval_batches: int = 16  # validation batches per evaluation (the same ones every time)
    log_interval: int = 10  # steps between lines of metrics.jsonl
    checkpoint_interval: int = 100  # steps between checkpoints (and one at the end)
    # the machine
    device: str = "auto"  # auto: cuda, else mps, else cpu
    dtype: str = "auto"  # auto: bfloat16 autocast on CUDA with bf16 support, else float32; or float32 / bfloat16
    threads: int = 0  # torch.set_num_threads; 0: PyTorch's default (one per core)
    peak_flops: float = 0.0  # one process's peak FLOP/s for MFU; 0: measured at the start by a matmul benchmark
    # the randomness
    seed: int = 0  # the model's initialisation and every batch drawn (train_batch_seed, eval_batch_seed)
    progress: bool = True  # the progress bar (rank 0)

    def check(self) -> None:
        """ValueError naming the first field out of range."""
        for name in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff", "batch_size",
                     "max_steps", "eval_interval", "eval_batches", "log_interval", "checkpoint_interval"):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        minimum = 256 + 1  # every byte, then <|endoftext|>
        if self.vocab_size < minimum and not self.vocab_path:
            raise ValueError(
                f"vocab_size must be at least 256 bytes + 1 special token ({EOT}) = {minimum}, got {self.vocab_size}"
            )
        if self.vocab_size > 1 << 16:
            raise ValueError(
                f"vocab_size must be at most 65536 (token ids are stored as uint16), got {self.vocab_size}"
            )
        if bool(self.vocab_path) != bool(self.merges_path):
            raise ValueError("give both vocab_path and merges_path (a tokenizer), or neither (train one)")
        if self.d_model % self.num_heads:
            raise ValueError(f"num_heads={self.num_heads} must divide d_model={self.d_model}")
        if (self.d_model // self.num_heads) % 2:
            raise ValueError(
                f"d_model / num_heads = {self.d_model // self.num_heads} must be even (RoPE rotates pairs)"
            )
        if not 0 < self.valid_fraction < 1:
            raise ValueError(f"valid_fraction must be in (0, 1), got {self.valid_fraction!r}")
        if not 0 <= self.min_lr <= self.max_lr:
            raise ValueError(f"need 0 <= min_lr <= max_lr, got min_lr={self.min_lr!r}, max_lr={self.max_lr!r}")
        if not 0 <= self.warmup_steps <= self.cycle_steps:
            raise ValueError(
                f"warmup_steps must be in [0, cosine_cycle_steps or max_steps = {self.cycle_steps}], "
                f"got {self.warmup_steps!r}"
            )
        if self.cosine_cycle_steps < 0:
            raise ValueError(f"cosine_cycle_steps must be >= 0 (0: max_steps), got {self.cosine_cycle_steps!r}")
        if not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0, got {self.max_grad_norm!r}")
        if not isinstance(self.threads, int) or self.threads < 0:
            raise ValueError(f"threads must be an integer >= 0 (0: PyTorch's default), got {self.threads!r}")
        if not self.peak_flops >= 0:
            raise ValueError(f"peak_flops must be >= 0 (0: measured), got {self.peak_flops!r}")
        if self.dtype not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"dtype must be auto, float32 or bfloat16, got {self.dtype!r}")
        if not self.diverge_loss >= 0:
            raise ValueError(f"diverge_loss must be >= 0 (0: 2 ln(vocab_size)), got {self.diverge_loss!r}")
        self.model_config()  # the ablations' names

    @property
    def cycle_steps(self) -> int:
        return self.cosine_cycle_steps or self.max_steps

    @property
    def loss_bound(self) -> float:
        """The training loss above which the run has diverged."""
        return self.diverge_loss or 2 * math.log(self.vocab_size)

    def model_config(self):
        """The TransformerLMConfig every consumer reads (training, evaluate, the leaderboard,
        account, MFU): each of this run's settings that names one of its fields (MODEL_NAMES: the
        setting's name where it differs), so that none is left to the model's default."""
        from cs336_basics.nn.modules import TransformerLMConfig

        model_fields = {f.name for f in fields(TransformerLMConfig)}
        return TransformerLMConfig(**{MODEL_NAMES.get(f.name, f.name): getattr(self, f.name) for f in fields(self)
                                      if MODEL_NAMES.get(f.name, f.name) in model_fields})  # fmt: skip

    def to_toml(self) -> str:
        return "".join(f"{f.name} = {_toml_value(getattr(self, f.name))}\n" for f in fields(self))


# A setting whose TransformerLMConfig field has another name: norm_eps is the norms' eps (AdamW's is adamw_eps).
MODEL_NAMES = {"norm_eps": "eps"}
# TransformerLMConfig's fields that no setting gives: a run's model keeps their defaults (multi-head
# attention, an untied LM head), which its checkpoint's shapes show.
NOT_SETTINGS = ("num_kv_heads", "tie_embeddings")


# What a checkpoint's shapes and meaning depend on: a run resumed with any of these changed is
# another run (cs336 train --resume refuses it).
ARCHITECTURE = ("vocab_size", "vocab_path", "merges_path", "context_length", "d_model", "num_layers", "num_heads",
                "d_ff", "rope_theta", "norm_eps", "norm", "position", "ffn", "norm_type", "corpus",
                "valid_fraction")  # fmt: skip


# Settings that do not change what a run computes: two runs differing only in these are the same run.
MACHINE = ("out_dir", "progress", "threads", "device")


# Settings that changed name: the old name is refused with the new one, never silently ignored.
RENAMED = {"eps": "adamw_eps"}  # AdamW's epsilon, not the norms' (norm_eps)


def settings_help() -> str:
    """Every setting with its default and its meaning (its comment in TrainConfig), one a line."""
    meanings, names = setting_meanings(), [f"--{f.name}={_toml_value(f.default)}" for f in fields(TrainConfig)]
    width = max(map(len, names))
    lines = [f"  {name.ljust(width)}  {meanings[f.name]}" for name, f in zip(names, fields(TrainConfig), strict=True)]
    return "settings (--setting=value, or setting = value in the --config file), with their defaults:\n" + "\n".join(
        lines
    )


def setting_meanings() -> dict[str, str]:
    """Each TrainConfig field's trailing comment in this file's source ("" for a field without one)."""
    source = inspect.getsource(TrainConfig).split("\n    def ")[0]
    found = {m[1]: m[2] for m in re.finditer(r"^    (\w+): [^=\n]+=[^#\n]*(?:#\s*(.*))?$", source, re.M)}
    return {f.name: found.get(f.name) or "" for f in fields(TrainConfig)}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _coerce(name: str, kind: type, value):
    """`value` (from TOML, or a command-line string) as the field's type, or a ValueError naming it."""
    if kind is str and isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, str) and kind is not str:
        text = value.strip()
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"{name} must be true or false, got {value!r}")
            return text.lower() in ("true", "1")
        try:
            return kind(float(text)) if kind is int and "e" in text.lower() else kind(text)
        except ValueError:
            raise ValueError(f"{name} must be {kind.__name__}, got {value!r}") from None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{name} must be {kind.__name__}, got {value!r}")
    return value


def apply(config: TrainConfig, values: dict, source: str) -> TrainConfig:
    """A copy of `config` with `values` set; ValueError naming an unknown key and where it came from."""
    types = {f.name: f.type for f in fields(TrainConfig)}  # int, float, str or bool
    changes = {}
    for key, value in values.items():
        name = key.replace("-", "_")
        if name in RENAMED:
            raise ValueError(f"{source}: the setting {key!r} is now called {RENAMED[name]!r}")
        if name not in types:
            raise ValueError(f"{source}: unknown setting {key!r} (settings: {', '.join(types)})")
        changes[name] = _coerce(name, types[name], value)
    return dataclasses.replace(config, **changes)


def read_toml(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no config file at {os.fspath(path)!r}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{os.fspath(path)!r} is not a valid TOML file: {e}") from None


def parse_overrides(args: list[str]) -> dict:
    """`--key=value` or `--key value` pairs (nanoGPT's style) as a dict of strings."""
    out, i = {}, 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or arg == "--":
            raise ValueError(f"expected --setting=value, got {arg!r}")
        if "=" in arg:
            key, value = arg[2:].split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            key, value, i = arg[2:], args[i + 1], i + 1
        else:
            raise ValueError(f"{arg} needs a value (--setting=value)")
        out[key] = value
        i += 1
    return out


def load_config(
    config_file: str | None = None, overrides: dict | None = None, base: TrainConfig | None = None, check: bool = True
) -> TrainConfig:
    """The defaults (or `base`), then the TOML file's settings, then the overrides; checked."""
    config = base or TrainConfig()
    if config_file:
        config = apply(config, read_toml(config_file), config_file)
    config = apply(config, overrides or {}, "command line")
    if check:
        config.check()
    return config
