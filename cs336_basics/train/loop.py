"""The training loop (CS336 section 5.3), given code that calls the components you write:
get_batch (data.py), TransformerLM, cross_entropy (nn/functional.py), AdamW, the cosine
schedule and gradient clipping (optim/), save_checkpoint and load_checkpoint (serialization.py),
train_bpe and Tokenizer (tokenizer/, through tokens.py).

Each step draws its batch with a generator seeded from (seed, step), so a run resumed from a
checkpoint (model, AdamW state, step) continues bit for bit as if it had not stopped.
Under torchrun every rank draws the same global batch of batch_size windows and takes its own
batch_size / world_size rows; PyTorch's DistributedDataParallel averages the gradients
(Li et al. 2020, "PyTorch Distributed"), so the update is that of the global batch. Only rank 0
writes (the run directory, checkpoints, metrics, the plot) and shows the progress bar.

A logged training loss that is NaN, inf or above diverge_loss stops the run: its last record in
metrics.jsonl says "diverged": true, and train raises FloatingPointError."""

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from cs336_basics.atomic_write import write_atomic
from cs336_basics.data import get_batch
from cs336_basics.nn.functional import cross_entropy
from cs336_basics.nn.modules import TransformerLM
from cs336_basics.optim import AdamW, get_lr_cosine_schedule, gradient_clipping
from cs336_basics.serialization import load_checkpoint, read_checkpoint, save_checkpoint
from cs336_basics.train import metrics as M
from cs336_basics.train import mfu as U
from cs336_basics.train import tokens as T
from cs336_basics.train.config import ARCHITECTURE, TrainConfig, load_config
from cs336_basics.train.run_dir import CHECKPOINT, CONFIG


def resolve_device(name: str) -> torch.device:
    """auto: cuda if present, else mps, else cpu; under torchrun on CUDA, this rank's GPU."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda" and device.index is None and "LOCAL_RANK" in os.environ:
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    from cs336_basics.data import checked_device

    try:
        return checked_device(device, "device")
    except RuntimeError as e:
        raise ValueError(str(e)) from None


def autocast_dtype(config: TrainConfig, device: torch.device) -> torch.dtype | None:
    """The autocast dtype: bfloat16 where asked, or by default on CUDA devices that support it."""
    if config.dtype == "bfloat16":
        return torch.bfloat16
    if config.dtype == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def resolve_config(config_file: str | None, overrides: dict, resume: bool) -> TrainConfig:
    """The run's configuration. Resuming starts from the run's config.toml, then the file and the
    overrides; changing what the checkpoint depends on (ARCHITECTURE) is refused, as is starting a
    new run in a directory that holds one."""
    config = load_config(config_file, overrides, check=not resume)  # on resume, checked once over the saved one
    run_dir = Path(config.out_dir)
    if not resume:
        if (run_dir / CHECKPOINT).exists():
            raise ValueError(
                f"{config.out_dir!r} already holds a run: pass --resume to continue it, or another --out_dir"
            )
        return config
    saved_file = run_dir / CONFIG
    if not (run_dir / CHECKPOINT).is_file() or not saved_file.is_file():
        raise FileNotFoundError(f"--resume: no run to resume in {config.out_dir!r} (no {CHECKPOINT} and {CONFIG})")
    saved = load_config(saved_file)
    config = load_config(config_file, overrides, base=saved)
    changed = [f"{k}={getattr(saved, k)!r} -> {getattr(config, k)!r}" for k in ARCHITECTURE
               if getattr(saved, k) != getattr(config, k)]  # fmt: skip
    if changed:
        raise ValueError(
            f"--resume: the checkpoint in {config.out_dir!r} is from another configuration ({', '.join(changed)})"
        )
    return config


@dataclass(frozen=True)
class Processes:
    """This process's place among the training processes: torchrun's rank and world size, and
    whether it trains under DistributedDataParallel (torchrun's one process too: `torchrun
    --nproc-per-node 1` checks DDP on one device); else rank 0 of 1, no DDP."""

    rank: int = 0
    world: int = 1
    ddp: bool = False


def _distributed() -> Processes:
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ and "LOCAL_RANK" in os.environ:
        return Processes(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), ddp=True)
    return Processes()


def train_batch_seed(seed: int, step: int) -> int:
    """The generator seed of training step `step`'s batch: a function of (seed, step) alone, so a
    resumed run draws the batches the uninterrupted run would have (distinct for steps < 1_000_003)."""
    return seed * 1_000_003 + step


def eval_batch_seed(seed: int, i: int) -> int:
    """The generator seed of the i-th validation batch: the same batches at every evaluation, and
    offset by 1_000_000_007 away from the training batches' seeds."""
    return seed * 7919 + 1_000_000_007 + i


def _batch(tokens, config: TrainConfig, seed: int, rank: int, world: int, device):
    """This rank's rows of the global batch that `seed` draws."""
    x, y = get_batch(tokens, config.batch_size, config.context_length, "cpu", torch.Generator().manual_seed(seed))
    rows = slice(rank * config.batch_size // world, (rank + 1) * config.batch_size // world)
    return x[rows].to(device), y[rows].to(device)


@torch.no_grad()
def evaluate(model, tokens, config: TrainConfig, device, autocast) -> float:
    """The mean loss over eval_batches fixed batches of the validation split (the same every time)."""
    model.eval()
    losses = []
    for i in range(config.eval_batches):
        x, y = _batch(tokens, config, eval_batch_seed(config.seed, i), 0, 1, device)
        with autocast():
            logits = model(x)
        losses.append(float(cross_entropy(logits.float(), y)))
    model.train()
    return sum(losses) / len(losses)


def train(config: TrainConfig, resume: bool = False) -> dict:
    """Train as `config` says (resuming from out_dir's checkpoint if asked); the last record."""
    procs = _distributed()
    if config.batch_size % procs.world:
        raise ValueError(
            f"batch_size={config.batch_size} must be a multiple of the number of processes ({procs.world})"
        )
    device = resolve_device(config.device)
    threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    run_dir = Path(config.out_dir)
    if procs.ddp and not dist.is_initialized():
        # Before the group: torch.optim imports torch._dynamo, and imported after init_process_group it
        # keeps the group alive past destroy_process_group; the group's threads then outlive the
        # interpreter and can abort the exiting rank at exit.
        from torch import _dynamo  # noqa: F401

        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        return _train(config, resume, procs, device, run_dir)
    finally:
        torch.set_num_threads(threads)  # a caller in the same process (a test) gets its threads back
        if procs.ddp and dist.is_initialized():
            dist.destroy_process_group()


def _prepare(config: TrainConfig, resume: bool, run_dir: Path) -> None:
    """Rank 0: everything checked first (the corpus, the checkpoint), then the run directory written."""
    splits = T.read_corpus(config)
    if resume:
        read_checkpoint(run_dir / CHECKPOINT)  # a corrupt file fails here, before anything is written
    run_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = T.make_tokenizer(config, run_dir, splits["train"])
    T.encode_splits(tokenizer, run_dir, splits)
    for split in splits:
        T.load_split(run_dir, split, config.context_length)


def _model_and_optimizer(config: TrainConfig, resume: bool, device, run_dir: Path):
    """The model and AdamW, seeded, and the step to start from: 0, or the checkpoint's with the time
    and CPU time the run had spent by then (`offset`)."""
    torch.manual_seed(config.seed)
    model = TransformerLM(config.model_config(), device=device)
    optimizer = AdamW(model.parameters(), lr=config.max_lr, betas=(config.beta1, config.beta2), eps=config.adamw_eps,
                      weight_decay=config.weight_decay)  # fmt: skip
    start, offset = 0, {"time_s": 0.0, "cpu_s": 0.0}
    if resume:
        try:
            start = load_checkpoint(run_dir / CHECKPOINT, model, optimizer)
        except RuntimeError as e:  # load_state_dict: missing keys or other shapes
            reason = " ".join(str(e).split())[:300]
            raise ValueError(f"--resume: {run_dir / CHECKPOINT} is from another configuration: {reason}") from None
        done = [r for r in M.read_metrics(run_dir) if r["step"] <= start and "train_loss" in r]
        offset = {k: done[-1][k] for k in offset} if done else offset
    return model, optimizer, start, offset


@dataclass
class _Meter:
    """The measured part of a logged record: throughput since the last record, over the time spent
    in training steps only (what runs inside `paused()`, validation and checkpoints, is left out),
    utilisation of `peak`, and wall and CPU time since the start plus a resumed run's earlier `offset`."""

    tokens_per_step: int
    flops_per_token: float
    peak: float
    offset: dict
    last_step: int
    t0: float = field(default_factory=lambda: time.perf_counter())
    c0: float = field(default_factory=lambda: time.process_time())
    last_time: float = field(default_factory=lambda: time.perf_counter())
    paused_s: float = 0.0  # time spent paused since the last record

    def record(self, done: int, train_loss: float, lr: float, grad_norm: float) -> dict:
        now = time.perf_counter()
        speed = (done - self.last_step) * self.tokens_per_step / max(now - self.last_time - self.paused_s, 1e-9)
        self.last_step, self.last_time, self.paused_s = done, now, 0.0
        return {"step": done, "train_loss": train_loss, "lr": lr, "grad_norm": grad_norm,
                "tokens": done * self.tokens_per_step, "tokens_per_s": round(speed, 1),
                **U.utilisation(speed, self.flops_per_token, self.peak), "peak_flops_per_s": float(f"{self.peak:.4g}"),
                "time_s": round(self.offset["time_s"] + now - self.t0, 3),
                "cpu_s": round(self.offset["cpu_s"] + time.process_time() - self.c0, 3)}  # fmt: skip

    @contextlib.contextmanager
    def paused(self):
        """Time spent inside is not training time: the next record's rate leaves it out."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.paused_s += time.perf_counter() - start

    def time_s(self) -> float:
        return round(self.offset["time_s"] + time.perf_counter() - self.t0, 3)


def _meter(config: TrainConfig, device, dtype, procs: Processes, offset: dict, start: int, bar) -> _Meter:
    """The meter of the run, its peak FLOP/s printed once (rank 0) with how it was obtained."""
    peak, how = U.peak_flops(config.peak_flops, device, dtype or torch.float32, procs.world)
    if procs.rank == 0:
        line = f"MFU divides by a peak of {peak:.4g} FLOP/s ({how})"
        bar.write(line) if bar is not None else print(line, file=sys.stderr, flush=True)
    return _Meter(config.batch_size * config.context_length, U.model_flops_per_token(config.model_config()), peak,
                  offset, start)  # fmt: skip


def _step(net, model, optimizer, tokens, config: TrainConfig, step: int, rank: int, world: int, device, autocast):
    """One optimizer step at the scheduled learning rate: (loss, lr, gradient norm before clipping)."""
    lr = get_lr_cosine_schedule(step, config.max_lr, config.min_lr, config.warmup_steps, config.cycle_steps)
    for group in optimizer.param_groups:
        group["lr"] = lr
    x, y = _batch(tokens, config, train_batch_seed(config.seed, step), rank, world, device)
    with autocast():
        logits = net(x)
    loss = cross_entropy(logits.float(), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = gradient_clipping(model.parameters(), config.max_grad_norm)
    optimizer.step()
    return loss, lr, grad_norm


def _log(record: dict, config: TrainConfig, rank: int, run_dir: Path, bar) -> None:
    """Rank 0 appends the record to metrics.jsonl; a diverged loss (above the bound, or NaN) stops the run."""
    diverged = not record["train_loss"] <= config.loss_bound  # NaN too
    if rank == 0:
        M.append_metrics(run_dir, {**record, "diverged": True} if diverged else record)
    if diverged:
        raise FloatingPointError(
            f"the training loss is {record['train_loss']} at step {record['step']}, above diverge_loss="
            f"{config.loss_bound:.4g}: the run diverged (lower max_lr?); metrics.jsonl marks it"
        )
    if bar is not None:
        bar.set_postfix(M.progress_fields(record), refresh=False)


def _evaluate_and_plot(
    model, tokens, config: TrainConfig, device, autocast, run_dir: Path, meter: _Meter, record: dict, bar
) -> dict:
    """Rank 0: the validation loss, appended to metrics.jsonl, plotted and printed; the record with it."""
    valid = evaluate(model, tokens, config, device, autocast)
    record = {**record, "valid_loss": valid}
    M.append_metrics(run_dir, {"step": record["step"], "valid_loss": valid, "time_s": meter.time_s()})
    M.plot_losses(run_dir, f"{run_dir.name}: {sum(p.numel() for p in model.parameters()):,} parameters")
    line = f"step {record['step']}: validation loss {valid:.4f}, {record.get('time_s', 0) / 60:.1f} min, {record.get('cpu_s', 0) / 60:.1f} CPU min"
    bar.write(line) if bar is not None else print(line, file=sys.stderr, flush=True)
    return record


def _train(config: TrainConfig, resume: bool, procs: Processes, device, run_dir: Path) -> dict:
    rank, world, ddp = procs.rank, procs.world, procs.ddp
    if rank == 0:
        _prepare(config, resume, run_dir)
    if ddp:
        dist.barrier()
    train_tokens = T.load_split(run_dir, "train", config.context_length)
    valid_tokens = T.load_split(run_dir, "valid", config.context_length)
    model, optimizer, start, offset = _model_and_optimizer(config, resume, device, run_dir)
    if rank == 0:
        write_atomic(run_dir / CONFIG, config.to_toml())
        M.truncate_metrics(run_dir, start)
    net = model
    if ddp:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    dtype = autocast_dtype(config, device)

    def autocast():
        return torch.autocast(device.type, dtype=dtype) if dtype else contextlib.nullcontext()

    bar = None
    if rank == 0 and config.progress:
        from tqdm import tqdm

        bar = tqdm(total=config.max_steps, initial=start, unit="step", dynamic_ncols=True, smoothing=0.1)
    meter = _meter(config, device, dtype, procs, offset, start, bar)
    record: dict = {"step": start}
    for step in range(start, config.max_steps):
        loss, lr, grad_norm = _step(net, model, optimizer, train_tokens, config, step, rank, world, device, autocast)
        done = step + 1
        last_step = done == config.max_steps
        if done % config.log_interval == 0 or last_step:
            value = loss.detach().float()
            if ddp:
                dist.all_reduce(value)
                value /= world
            record = meter.record(done, float(value), lr, float(grad_norm))
            _log(record, config, rank, run_dir, bar)
        with meter.paused():  # not training time: left out of the token rate and MFU
            if rank == 0 and (done % config.eval_interval == 0 or last_step):
                record = _evaluate_and_plot(model, valid_tokens, config, device, autocast, run_dir, meter, record, bar)
            if rank == 0 and (done % config.checkpoint_interval == 0 or last_step):
                save_checkpoint(model, optimizer, done, run_dir / CHECKPOINT)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return record
