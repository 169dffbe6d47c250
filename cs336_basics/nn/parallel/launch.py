"""Start a process group of `world_size` ranks on this machine, run a function on every rank and
collect what each returns: for tests, adapters and benchmarks (a real cluster uses `torchrun`).

The ranks rendezvous on 127.0.0.1 at a free port. Each writes its result, or its exception and
traceback, to a file in a private directory. The parent waits at most `timeout` seconds; as soon
as one rank fails, or the time is up, it kills every rank still running (a rank blocked in a
collective whose partner died would otherwise hang) and re-raises the failing rank's exception.
No rank outlives the call.

Inside `recording_ranks(recorder)`, every rank runs `fn` under a fresh `recorder()` (the tests'
and the grader's: builtin_guard.CallRecorder), entered in the rank once its group is up and
before `fn` (so before any of the package's code runs there), and sends its record back with its
result: the grader checks a tensor-parallel component's calls with it, as it checks every other
component's in its own process.
"""

import functools
import gc
import multiprocessing as mp
import os
import pickle
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from cs336_basics.atomic_write import atomic_open
from cs336_basics.nn import convert
from cs336_basics.nn.parallel import sharding
from cs336_basics.nn.parallel.collectives import counting_collectives
from cs336_basics.nn.parallel.comm import choose_backend

START_METHOD_ENV = "CS336_START_METHOD"
DEFAULT_TIMEOUT = 60.0


class RemoteTraceback(Exception):
    """The traceback of an exception raised in another process (as concurrent.futures shows it)."""

    def __str__(self) -> str:
        return self.args[0]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_start_method() -> str:
    """$CS336_START_METHOD, else fork on Linux (the ranks start at once, sharing the parent's
    imports) and spawn elsewhere (fork is unsafe on macOS). A process with other threads gets
    forkserver instead: a fork copies locks other threads hold, and a rank forked from the
    grader's thread pool hung on one (`fn`, `args` must then pickle)."""
    if os.environ.get(START_METHOD_ENV):
        return os.environ[START_METHOD_ENV]
    if not sys.platform.startswith("linux"):
        return "spawn"
    return "fork" if threading.active_count() == 1 else "forkserver"


@dataclass
class RankRecords:
    """What the ranks launched inside `recording_ranks()` recorded: the union of their calls
    (the recorder's names), the operators they ran, how many ranks started and how many sent a
    record back."""

    recorder: Callable[[], Any]  # a context manager with .calls (a set of names) and .operators (an int)
    rank_setup: Callable[[], None] | None = None  # run in each rank before its recorder starts
    calls: set[str] = field(default_factory=set)
    operators: int = 0
    started: int = 0
    recorded: int = 0

    @property
    def complete(self) -> bool:
        """Every rank that started sent its record back."""
        return self.recorded == self.started


_recording: list[RankRecords] = []  # the innermost active recording_ranks() is last


@contextmanager
def recording_ranks(recorder: Callable[[], Any], rank_setup: Callable[[], None] | None = None) -> Iterator[RankRecords]:
    """While active, each rank `launch` starts runs its fn under a fresh recorder() (e.g.
    builtin_guard.CallRecorder), after rank_setup() (e.g. the grader's seccomp filter), and its
    record is added to the RankRecords yielded (a rank that fails sends its exception instead,
    which launch raises)."""
    records = RankRecords(recorder, rank_setup)
    _recording.append(records)
    try:
        yield records
    finally:
        _recording.remove(records)


def _leave_inherited_recording() -> None:
    """A forked rank inherits the torch mode stacks, the profiler and the profile hook of the
    thread that launched it, a recorder's if one was active there: they record into the parent's
    copy of it, which never comes back, and slow the rank down. Every rank leaves them first, so
    that a rank's own recorder starts on empty stacks."""
    from torch.overrides import _pop_mode
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    from torch.utils._python_dispatch import _pop_mode as _pop_dispatch_mode

    sys.setprofile(None)
    while torch._C._len_torch_function_stack() > 0:
        _pop_mode()
    while _get_current_dispatch_mode_stack():
        _pop_dispatch_mode()
    if torch._C._autograd._profiler_enabled():
        torch.autograd._disable_profiler_legacy()


def _recorded_call(record: RankRecords, fn, args: tuple) -> dict:
    """{"ok": fn(*args), "calls": [...], "operators": n}, fn run under the recorder (a banned
    call is judged by whoever reads the record, as in the grader's worker)."""
    if record.rank_setup is not None:
        record.rank_setup()
    with record.recorder() as recorder:
        out = fn(*args)
    if threading.active_count() > 1:  # the recorder sees the calling thread only
        raise RuntimeError("a thread was running in a rank: graded code must run in the thread that calls it")
    return {"ok": out, "calls": sorted(recorder.calls), "operators": recorder.operators}


def _failure(e: BaseException) -> dict:
    """An exception as the parent will re-raise it, stamped with the time it happened: when one
    rank fails, its partners fail after it (their connections reset), and the parent reports the
    first."""
    try:
        pickle.dumps(e)
        err = e
    except Exception:  # noqa: BLE001 -- an unpicklable exception travels as text
        err = RuntimeError(f"{type(e).__name__}: {e}")
    return {"error": err, "traceback": traceback.format_exc(), "time_ns": time.time_ns()}


def _rank_main(
    rank: int, world_size: int, port: int, backend: str, timeout: float | int, fn, args, out: str, record
) -> None:
    gc.freeze()  # a forked rank never collects what it inherited: a collection copies every page it visits
    torch.set_num_threads(1)  # W ranks share the machine's cores; also keeps a forked OpenMP pool unused
    path = Path(out) / f"rank{rank}.pkl"
    try:
        _leave_inherited_recording()
        if backend == "nccl":
            torch.cuda.set_device(rank % torch.cuda.device_count())
        if backend == "gloo":  # the group lives on 127.0.0.1: gloo's device on the loopback interface,
            # not on whatever address the host name resolves to (none, in a network namespace)
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo0" if sys.platform == "darwin" else "lo")
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout),
        )
        # Gloo may finish connecting on one rank before its partner does; a rank whose fn issues
        # no collective would then tear the group down under a partner still connecting
        # ("connectFullMesh failed ... Connection closed by peer", 6 of 40 launches of a
        # collective-free fn here without this barrier, 0 of 200 with it).
        dist.barrier()
        try:
            if record is None:
                result = {"ok": fn(rank, world_size, *args)}
            else:
                result = _recorded_call(record, fn, (rank, world_size, *args))
        except BaseException as e:  # noqa: BLE001 -- recorded before the group goes, see _failure
            result = _failure(e)
        finally:
            dist.destroy_process_group()
    except BaseException as e:  # noqa: BLE001 -- every failure goes back to the parent
        result = _failure(e)
    with atomic_open(path, "wb") as f:
        torch.save(result, f, pickle_module=pickle)
    if "error" in result:
        os._exit(1)


def _stop(procs: list) -> None:
    procs = [p for p in procs if p.pid is not None]  # started: a failed start must not hide its own error
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 5.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()


def launch(
    fn: Callable[..., Any],
    world_size: int,
    args: tuple = (),
    backend: str | None = None,
    timeout: float | int = DEFAULT_TIMEOUT,  # noqa: PYI041 -- beartype rejects an int for a float
    start_method: str | None = None,
) -> list[Any]:
    """[fn(rank, world_size, *args) for each rank], each run in its own process inside a process
    group of `world_size` ranks (backend: `comm.choose_backend`). `fn` and `args` must pickle
    under `spawn`. Raises the first failing rank's exception (its traceback chained), or
    TimeoutError naming the ranks still running after `timeout` seconds."""
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    backend = choose_backend(backend)
    ctx = mp.get_context(start_method or default_start_method())
    record = _recording[-1] if _recording else None
    if record is not None:
        record.started += world_size
    with tempfile.TemporaryDirectory(prefix="cs336_parallel_") as out:
        port = free_port()
        procs = [
            ctx.Process(
                target=_rank_main,
                args=(r, world_size, port, backend, timeout, fn, args, out, record),
                name=f"cs336-rank{r}",
                daemon=True,
            )
            for r in range(world_size)
        ]
        unfinished = _wait_for_ranks(procs, timeout)
        outcome = _collect(procs, Path(out), unfinished, record)
    if outcome.errors:
        _, rank, res = min(outcome.errors, key=lambda e: e[:2])  # the first to fail; its partners fail after it
        raise res["error"] from RemoteTraceback(f"\nrank {rank} of {world_size}:\n{res['traceback']}")
    if outcome.silent:
        raise RuntimeError(f"ranks died without a result (rank, exit code): {outcome.silent}")
    if unfinished:
        raise TimeoutError(f"ranks {unfinished} of a group of {world_size} did not finish within {timeout:g} s; killed")
    return outcome.results


def _wait_for_ranks(procs: list, timeout: float | int) -> list[int]:  # noqa: PYI041 -- beartype: an int is not a float
    """Start the ranks and wait until all end, one fails, or `timeout` passes; every rank is
    stopped then. The ranks still running at that point."""
    running = list(procs)
    try:
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        while running and time.monotonic() < deadline:
            for s in wait([p.sentinel for p in running], timeout=deadline - time.monotonic()):
                p = next(p for p in running if p.sentinel == s)
                p.join()
                running.remove(p)
            if any(p.exitcode != 0 for p in procs if p.exitcode is not None):
                break  # one rank failed: its partners may be blocked in a collective
    finally:
        unfinished = [r for r, p in enumerate(procs) if p in running]
        _stop(procs)
    return unfinished


@dataclass
class _Outcome:
    """What the ranks left in their result files: fn's values (None where a rank left none), the
    failures as (time_ns, rank, result), and the ranks that ended without a file (rank, exit code)."""

    results: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    silent: list = field(default_factory=list)


def _collect(procs: list, out: Path, unfinished: list[int], record) -> _Outcome:
    """Read each rank's result file; a recorded run's calls are added to `record`."""
    outcome = _Outcome()
    for r, p in enumerate(procs):
        path = out / f"rank{r}.pkl"
        if not path.exists():
            outcome.results.append(None)
            if r not in unfinished:
                outcome.silent.append((r, p.exitcode))
            continue
        with open(path, "rb") as f:
            res = torch.load(f, pickle_module=pickle, weights_only=False)
        if "error" in res:
            outcome.errors.append((res["time_ns"], r, res))
        elif record is not None and isinstance(res.get("calls"), list):
            record.calls.update(str(c) for c in res["calls"])
            record.operators += int(res.get("operators", 0))
            record.recorded += 1
        outcome.results.append(res.get("ok"))
    return outcome


def _sharded_output(
    rank: int, world_size: int, make_module, state_dict: dict[str, Tensor], x: Tensor, forward_args: tuple = ()
):
    """Build, load this rank's shard, run module(x, *forward_args): (this rank's output on the
    group's device, whether the module leaves it sharded)."""
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else x.device
    module = make_module(device=device, dtype=x.dtype if x.is_floating_point() else _weights_dtype(state_dict))
    shard = sharding.shard_state_dict(state_dict, sharding.sharding_plan(module), rank, world_size)
    convert.load_state_dict(module, shard)
    with torch.no_grad():
        y = module(x.to(device), *(a.to(device) if isinstance(a, Tensor) else a for a in forward_args))
    return y, bool(module.output_is_sharded)


def _weights_dtype(state_dict: dict[str, Tensor]) -> torch.dtype:
    """The dtype of a state dict's floating-point tensors (a model's, whose input is token ids)."""
    return next(t.dtype for t in state_dict.values() if t.is_floating_point())


def _sharded_forward(
    rank: int, world_size: int, make_module, state_dict: dict[str, Tensor], x: Tensor, forward_args: tuple = ()
):
    """One rank of `run_sharded`'s launch: its output, on the CPU for the parent."""
    y, sharded = _sharded_output(rank, world_size, make_module, state_dict, x, forward_args)
    return y.cpu(), sharded


def run_sharded(
    make_module: Callable[..., torch.nn.Module],
    state_dict: dict[str, Tensor],
    x: Tensor,
    world_size: int,
    forward_args: tuple = (),
    **launch_kwargs,
) -> Tensor:
    """make_module(device=, dtype=) built on each of `world_size` ranks, loaded with its shard of
    the full `state_dict` (`sharding.shard_state_dict` by the module's `sharding_plan`) and applied
    to x (and forward_args: token_positions, ...). Returns the whole output as one tensor on x's device: rank 0's, or every rank's
    concatenated along the last dim where the module leaves its output sharded.

    Called on a rank of a running group of `world_size` (a test that runs many cases in one
    launch, or a torchrun job), it computes this rank's part in that group and all-gathers a
    sharded output on the group's device; launch_kwargs then do not apply."""
    if dist.is_initialized():
        if dist.get_world_size() != world_size:
            raise ValueError(
                f"run_sharded on a rank of a group of {dist.get_world_size()} needs world_size="
                f"{dist.get_world_size()}, got {world_size}"
            )
        y, sharded = _sharded_output(dist.get_rank(), world_size, make_module, state_dict, x, forward_args)
        if sharded:
            parts = [torch.empty_like(y) for _ in range(world_size)]
            dist.all_gather(parts, y)  # before leaving the device: nccl gathers CUDA tensors only
            y = torch.cat(parts, dim=-1)
        return y.to(x.device)
    outputs = launch(_sharded_forward, world_size, (make_module, state_dict, x, forward_args), **launch_kwargs)
    ys = [y for y, _ in outputs]
    return (torch.cat(ys, dim=-1) if outputs[0][1] else ys[0]).to(x.device)


def _sharded_grads(
    rank: int, world_size: int, make_module, state_dict: dict[str, Tensor], x: Tensor, grad_output: Tensor
):
    """One rank's backward of sum(module(x) * grad_output) (this rank's slice of grad_output where
    the module leaves its output sharded): (x's gradient, {key: this rank's weight gradient}, the
    sharding plan, {"forward"/"backward": {collective: calls} this rank issued}), on the CPU."""
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else x.device
    module = make_module(device=device, dtype=x.dtype)
    plan = sharding.sharding_plan(module)
    convert.load_state_dict(module, sharding.shard_state_dict(state_dict, plan, rank, world_size))
    x = x.detach().to(device).requires_grad_()
    grad = grad_output.to(device)
    if module.output_is_sharded:
        grad = grad.chunk(world_size, dim=-1)[rank]
    with torch.enable_grad():  # a case may be computed under no_grad (the fork inherits it)
        with counting_collectives() as forward:
            y = module(x)
        with counting_collectives() as backward:
            y.backward(grad)
    counts = {"forward": dict(forward), "backward": dict(backward)}
    return x.grad.cpu(), {key: p.grad.cpu() for key, p in module.named_parameters()}, plan, counts


def _gathered_in_group(world_size: int, x_grad: Tensor, grads: dict[str, Tensor]) -> tuple[Tensor, list[dict]]:
    """In a running group: rank 0's x gradient and every rank's weight gradients, on every rank."""
    dist.broadcast(x_grad, src=0)
    shards = [{} for _ in range(world_size)]
    for key, g in grads.items():
        parts = [torch.empty_like(g) for _ in range(world_size)]
        dist.all_gather(parts, g)
        for r, part in enumerate(parts):
            shards[r][key] = part
    return x_grad, shards


def run_sharded_backward(
    make_module: Callable[..., torch.nn.Module],
    state_dict: dict[str, Tensor],
    x: Tensor,
    grad_output: Tensor,
    world_size: int,
) -> tuple[Tensor, dict[str, Tensor]]:
    """The gradients of sum(module(x) * grad_output) for `run_sharded`'s module: x's gradient
    (rank 0's: Megatron's f all-reduces it, so every rank holds the whole) and the full state
    dict's gradients, gathered from the ranks' shards by the module's sharding plan. On a rank of
    a running group it computes this rank's part there, as run_sharded does."""
    if dist.is_initialized():
        x_grad, grads, plan, _ = _sharded_grads(dist.get_rank(), world_size, make_module, state_dict, x, grad_output)
        x_grad, shards = _gathered_in_group(world_size, x_grad, grads)
    else:
        ranks = launch(_sharded_grads, world_size, (make_module, state_dict, x, grad_output))
        x_grad, shards, plan = ranks[0][0], [rank[1] for rank in ranks], ranks[0][2]
    return x_grad.to(x.device), {k: g.to(x.device) for k, g in sharding.gather_state_dict(shards, plan).items()}


def run_sharded_collectives(
    make_module: Callable[..., torch.nn.Module],
    state_dict: dict[str, Tensor],
    x: Tensor,
    grad_output: Tensor,
    world_size: int,
) -> dict[str, dict[str, int]]:
    """{"forward": {collective: calls}, "backward": {...}}: what rank 0 issues in the passes of
    `run_sharded_backward` (collectives.COLLECTIVES names them; every rank issues the same)."""
    if dist.is_initialized():
        return _sharded_grads(dist.get_rank(), world_size, make_module, state_dict, x, grad_output)[3]
    return launch(_sharded_grads, world_size, (make_module, state_dict, x, grad_output))[0][3]


def module_factory(cls: type, **kwargs) -> Callable[..., torch.nn.Module]:
    """A picklable `cls(**kwargs, device=, dtype=)` for `run_sharded`."""
    return functools.partial(cls, **kwargs)
