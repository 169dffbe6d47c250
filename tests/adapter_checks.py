"""The graded scenarios the adapters run (tests/adapters.py): the checks that turn what a
component did into 1 or 0 per property (initialisation, get_batch, the checkpoint), and the
multi-step procedures around a component's calls (generation's stepped calls, AdamW's steps and
resumption, gradient clipping on parameters, training resumed from a checkpoint). The student's
code comes in as arguments, the adapters' own functions: this module imports only the standard
library, NumPy and PyTorch, so the grader's worker runs its pristine copy before any code of the
submission's and checks afterwards that nothing in it changed. Plain functions and constants
only at the top level (a class is local to the function that uses it): what the worker checks.
"""

import copy
import ctypes
import io
import itertools
import math
import mmap
import os
import random
import tempfile

import numpy as np
import torch
from torch import Tensor

# Initialisation checks (CS336 a1 section 3.4.1). The bounds come from the sample size
# (tests/_init_stats.py says how; the public tests read them there).
INIT_K = 5.0  # standard errors
INIT_FALSE_FAILURE = math.erfc(INIT_K / math.sqrt(2.0))  # 2 (1 - Phi(5)) = 5.7e-7 per check
INIT_CUT = 3.0  # truncation at +-3 standard deviations of the untruncated normal


def _normal_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def truncated_std(sigma: float, cut: float = INIT_CUT) -> float:
    """Standard deviation of N(0, sigma^2) truncated to [-cut sigma, cut sigma]:
    sigma sqrt(1 - 2 c phi(c) / (2 Phi(c) - 1)) with c = cut (Johnson, Kotz & Balakrishnan 1994,
    ch. 13; for c = 3 the factor is 0.98658)."""
    mass = math.erf(cut / math.sqrt(2.0))  # 2 Phi(c) - 1
    return sigma * math.sqrt(1.0 - 2.0 * cut * _normal_pdf(cut) / mass)


def truncated_kurtosis(cut: float = INIT_CUT) -> float:
    """E[z^4] / E[z^2]^2 of the standard normal truncated to [-cut, cut]:
    E[z^2] = 1 - 2 c phi(c) / m, E[z^4] = 3 - 2 c (c^2 + 3) phi(c) / m, m = 2 Phi(c) - 1
    (for c = 3: 2.83, a little below the normal's 3)."""
    mass = math.erf(cut / math.sqrt(2.0))
    m2 = 1.0 - 2.0 * cut * _normal_pdf(cut) / mass
    m4 = 3.0 - 2.0 * cut * (cut * cut + 3.0) * _normal_pdf(cut) / mass
    return m4 / (m2 * m2)


def mean_bound(std: float, n: int, k: float = INIT_K) -> float:
    """k standard errors of the sample mean of n draws of standard deviation std: k std / sqrt(n)."""
    return k * std / math.sqrt(n)


def relative_std_bound(n: int, k: float = INIT_K, kurtosis: float | None = None) -> float:
    """k relative standard errors of the sample standard deviation s of n draws:
    Var(s^2) ~= sigma^4 (kappa - 1) / n, so sd(s) / sigma ~= sqrt((kappa - 1) / (4 n)) (delta
    method; kappa = 3 gives the normal's 1 / sqrt(2 n))."""
    kappa = truncated_kurtosis() if kurtosis is None else kurtosis
    return k * math.sqrt((kappa - 1.0) / (4.0 * n))


def init_sample(weight: torch.Tensor) -> torch.Tensor:
    """A parameter's values as a flat float64 tensor."""
    return weight.detach().double().reshape(-1)


INIT_CHECKS = (
    "the weights' mean is 0 (within 5 standard errors)",
    "the weights' standard deviation is the stated normal's truncated at 3 std (within 5 standard errors)",
    "every weight lies within 3 std of the stated normal",
    "every bias is 0",
    "every gain is 1",
    "every parameter takes the dtype the module is given (float64)",
)


def init_checks(
    weight: Tensor | None,
    sigma: float,
    bias: Tensor | None = None,
    gain: Tensor | None = None,
    in_float64: torch.nn.Module | None = None,
) -> Tensor:
    """1 or 0 for each of INIT_CHECKS, int64: `weight` against N(0, sigma^2) truncated at
    INIT_CUT sigma, `bias` all 0, `gain` all 1, every parameter of `in_float64` (the module built
    with dtype=torch.float64) float64 (what is None passes its checks)."""
    found = [True, True, True]
    if weight is not None:
        w, std = init_sample(weight), truncated_std(sigma)
        found = [
            abs(w.mean().item()) <= mean_bound(std, w.numel()),
            abs(w.std().item() / std - 1.0) <= relative_std_bound(w.numel()),
            w.abs().max().item() <= INIT_CUT * sigma,
        ]
    found += [bias is None or bool((bias.detach() == 0).all()), gain is None or bool((gain.detach() == 1).all())]
    found += [in_float64 is None or all(p.dtype == torch.float64 for p in in_float64.parameters())]
    return torch.tensor(found, dtype=torch.int64)


def seeded(seed: int, build):
    """build() with torch's global generator seeded by `seed`, its state outside left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def in_steps(run, seq: int, prefill_length: int, step_length: int = 1) -> Tensor:
    """run(start, end) for the first prefill_length positions, then for step_length more at a time,
    concatenated along the sequence: how generation calls a model with a key/value cache (step_length
    1; more, as speculative decoding or a chunked prefill does)."""
    if not 1 <= prefill_length <= seq:
        raise ValueError(f"prefill_length must be in [1, {seq}] (the sequence length), got {prefill_length}")
    if step_length < 1:
        raise ValueError(f"step_length must be at least 1, got {step_length}")
    bounds = [0, *range(prefill_length, seq, step_length), seq]
    return torch.cat([run(start, end) for start, end in itertools.pairwise(bounds)], dim=-2)


# The graded procedures of the training components: each runs the student's code (given as an
# argument) on tensors and returns one tensor, so a case is "inputs in, tensor out" like the others.


def adamw_steps(
    adamw_cls,
    params: dict[str, Tensor],
    grads: dict[str, Tensor],
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    group_lrs: Tensor | None = None,
    resume_after: int = 0,
) -> Tensor:
    """adamw_cls on copies of `params` (one group; with group_lrs, one group per parameter in
    sorted name order with that lr), stepped once per gradient in grads[name] (steps, *shape);
    with resume_after > 0, after that many steps its state_dict (a deep copy) is loaded into a
    new optimizer on the same parameters, which takes the remaining steps. The parameters after
    the last step, flattened and concatenated in sorted name order."""
    names = sorted(params)
    weights = [torch.nn.Parameter(params[name].clone()) for name in names]

    def new_optimizer():
        groups = weights if group_lrs is None else [
            {"params": [w], "lr": float(r)} for w, r in zip(weights, group_lrs.tolist(), strict=True)
        ]  # fmt: skip
        return adamw_cls(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    optimizer = new_optimizer()
    for step in range(grads[names[0]].shape[0]):
        if resume_after and step == resume_after:
            state = copy.deepcopy(optimizer.state_dict())
            optimizer = new_optimizer()
            optimizer.load_state_dict(state)
        for name, w in zip(names, weights, strict=False):
            w.grad = grads[name][step].clone()
        optimizer.step()
    return torch.cat([w.detach().reshape(-1) for w in weights])


def gradient_clipping_of(
    gradient_clipping,
    grads: dict[str, Tensor],
    max_l2_norm: float,
    params_without_grad: int = 0,
    one_pass: bool = False,
    with_norm: bool = False,
) -> Tensor:
    """gradient_clipping(parameters, max_l2_norm) on parameters holding copies of `grads` (sorted
    by name), with `params_without_grad` more parameters that have none placed among them, given as
    a list (as an iterator that can be read once, like model.parameters(), if one_pass); the
    gradients after clipping, flattened and concatenated, then (with_norm) the norm it returned,
    in their dtype."""
    params = []
    for i, name in enumerate(sorted(grads)):
        like = dict(device=grads[name].device, dtype=grads[name].dtype)
        if i < params_without_grad:
            params.append(torch.nn.Parameter(torch.zeros(3, **like)))  # grad None
        w = torch.nn.Parameter(torch.zeros_like(grads[name]))
        w.grad = grads[name].clone()
        params.append(w)
    norm = gradient_clipping(iter(params) if one_pass else params, max_l2_norm)
    clipped = torch.cat([w.grad.reshape(-1) for w in params if w.grad is not None])
    if not with_norm:
        return clipped
    returned = torch.as_tensor(float("nan") if norm is None else norm, device=clipped.device, dtype=clipped.dtype)
    return torch.cat([clipped, returned.reshape(1)])


# The graded scenarios of get_batch and the checkpoint. A batch is random and a checkpoint is a
# file, so each graded case runs a fixed scenario around the student's functions and returns one
# tensor: what it observed about the batches, or the parameters training ended with. The grader
# runs them in its worker on inputs it drew; the expected tensor stays outside.

GET_BATCH_CHECKS = (
    "shape (batch_size, context_length), dtype torch.long, on the device",
    "every input row is context_length consecutive tokens of the dataset",
    "every target row is its input row's window moved on by one token",
    "no batch repeats one window in every row",
    "the first start (0) is drawn",
    "the last start (len(dataset) - context_length - 1) is drawn",
    "every start is drawn a number of times within its binomial bounds",
    "one call reads less than half of a 12 MB token file (np.memmap pages resident after it)",
)
GET_BATCH_FALSE_FAILURE = 1e-6  # the bounds' share; see binomial_bounds
MEMMAP_BYTES = 12 << 20  # the sparse token file of the last check: under the grader worker's 16 MB /tmp


def resident_fraction(array: np.memmap) -> float | None:
    """The share of the memory-mapped file's pages in memory (mincore(2), Linux and macOS), or
    None where that cannot be asked."""
    try:
        mincore = ctypes.CDLL(None, use_errno=True).mincore
    except (AttributeError, OSError):
        return None
    pages = (array.nbytes + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    if mincore(ctypes.c_void_p(array.ctypes.data), ctypes.c_size_t(array.nbytes), vec) != 0:
        return None
    return float((np.frombuffer(vec, dtype=np.uint8) & 1).mean())


def reads_little_of_a_memmap(get_batch, directory: str, context_length: int, token_dtype: str = "uint16") -> bool:
    """One get_batch(tokens, 1, context_length, "cpu") call of one row on a fresh sparse token file of MEMMAP_BYTES (zeros, no
    page in memory yet, read-ahead off) leaves less than half of its pages resident. True where
    residency cannot be measured (mincore missing, or pages resident before the call)."""
    path = os.path.join(directory, "sparse_tokens.bin")
    with open(path, "wb") as f:
        f.truncate(MEMMAP_BYTES)
    tokens = np.memmap(path, dtype=token_dtype, mode="r")
    if hasattr(mmap, "MADV_RANDOM") and hasattr(tokens._mmap, "madvise"):
        tokens._mmap.madvise(mmap.MADV_RANDOM)  # no read-ahead: a fault reads its own page (8 MB ahead otherwise)
    before = resident_fraction(tokens)
    if before is None or before > 0:
        return True
    get_batch(tokens, 1, context_length, "cpu")
    return resident_fraction(tokens) < 0.5


def _seed_globals(seed: int) -> tuple:
    """Seed Python's, NumPy's and torch's global generators, so a get_batch on any of them draws
    the same batches on every run of a case; returns their states before, for _restore_globals."""
    saved = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    random.seed(seed), np.random.seed(seed % 2**32), torch.manual_seed(seed)
    return saved


def _restore_globals(saved: tuple) -> None:
    random.setstate(saved[0]), np.random.set_state(saved[1]), torch.random.set_rng_state(saved[2])


def most_common_distance(starts: np.ndarray) -> tuple[int, int, int]:
    """(distance, how often, out of how many) for the commonest start[2i + 1] - start[2i] over
    disjoint row pairs of `starts` (batches x rows): pairs that share no row are independent."""
    distances = (starts[:, 1::2] - starts[:, 0 : 2 * (starts.shape[1] // 2) : 2]).ravel()
    if distances.size == 0:
        return 0, 0, 0
    values, counts = np.unique(distances, return_counts=True)
    return int(values[counts.argmax()]), int(counts.max()), int(distances.size)


def starts_are_independent(starts: np.ndarray, num_starts: int) -> bool:
    """Whether rows' starts (batches x rows, drawn from num_starts) look like independent uniform
    draws: for those, P(distance = d) <= 1 / num_starts for each of the 2 num_starts - 1 distances,
    so the commonest distance stays within Binomial(pairs, 1 / num_starts)'s bound at
    GET_BATCH_FALSE_FAILURE / (2 num_starts - 1) (union bound)."""
    _, count, pairs = most_common_distance(starts)
    if pairs == 0:
        return True
    return count <= binomial_bounds(pairs, 1 / num_starts, GET_BATCH_FALSE_FAILURE / (2 * num_starts - 1))[1]


def binomial_bounds(n: int, p: float, alpha: float) -> tuple[int, int]:
    """[lo, hi] with P(X < lo) <= alpha / 2 and P(X > hi) <= alpha / 2 for X ~ Binomial(n, p),
    from the exact probabilities (log-gamma)."""
    if p >= 1:
        return n, n
    logs = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)
        for k in range(n + 1)
    ]
    pmf = [math.exp(v) for v in logs]
    lo, tail = 0, 0.0
    while tail + pmf[lo] <= alpha / 2:
        tail, lo = tail + pmf[lo], lo + 1
    hi, tail = n, 0.0
    while tail + pmf[hi] <= alpha / 2:
        tail, hi = tail + pmf[hi], hi - 1
    return lo, hi


def get_batch_checks(
    tokens: np.ndarray,
    batches: list,
    batch_size: int,
    context_length: int,
    device: str = "cpu",
    reads_little: bool = True,
) -> Tensor:
    """1 or 0 for each of GET_BATCH_CHECKS over `batches` [(x, y), ...] drawn from `tokens`, a
    1-D array of distinct token ids (so a row's first token names its start); the last check is
    `reads_little` (reads_little_of_a_memmap). The start counts
    are bounded per start at GET_BATCH_FALSE_FAILURE / (number of starts): a correct get_batch
    fails that check with probability at most GET_BATCH_FALSE_FAILURE (union bound)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    starts = len(tokens) - context_length
    shape, on = (batch_size, context_length), torch.device(device)
    formed = [  # plain comparisons, no generator per batch: the snapshot test runs this under a profile hook
        (x, y)
        for x, y in batches
        if isinstance(x, Tensor)
        and isinstance(y, Tensor)
        and x.dtype == y.dtype == torch.long
        and x.shape == y.shape == shape
        and x.device == y.device == on
    ]
    form = len(formed) == len(batches)
    # every well-formed batch at once: (batches, batch_size, context_length)
    x = torch.stack([x for x, _ in formed]).cpu().numpy() if formed else np.zeros((0, *shape), dtype=np.int64)
    y = torch.stack([y for _, y in formed]).cpu().numpy() if formed else x
    where = np.full(int(tokens.max()) + 1, -1)
    where[tokens] = np.arange(len(tokens))
    first = x[..., 0]  # (batches, batch_size): a row's first token names its start
    s = where[np.clip(first, 0, len(where) - 1)]
    s = np.where((first >= 0) & (first < len(where)) & (s >= 0) & (s < starts), s, -1)
    window = np.clip(s, 0, starts - 1)[..., None] + np.arange(context_length)  # (batches, batch_size, context)
    real = (s >= 0) & (tokens[window] == x).all(-1)
    windows, targets = bool(real.all()), bool((real & (tokens[window + 1] == y).all(-1)).all())
    differ = batch_size == 1 or starts == 1 or bool((x != x[:, :1]).any(axis=(1, 2)).all())  # not every row alike
    counts = np.bincount(s[real], minlength=starts)
    lo, hi = (
        binomial_bounds(int(counts.sum()), 1 / starts, GET_BATCH_FALSE_FAILURE / starts) if counts.sum() else (1, 0)
    )
    checks = (
        form,
        windows,
        targets,
        differ,
        counts[0] > 0,
        counts[-1] > 0,
        bool(((counts >= lo) & (counts <= hi)).all()),
        reads_little,
    )
    return torch.tensor([int(c) for c in checks], dtype=torch.long)


def get_batch_file_checks(
    get_batch,
    dataset: Tensor,
    batch_size: int,
    context_length: int,
    num_batches: int,
    seed: int,
    token_dtype: str = "uint16",
) -> Tensor:
    """Writes `dataset` (distinct token ids) to a token file of `token_dtype`, opens it with
    np.memmap, calls get_batch(tokens, batch_size, context_length, "cpu") num_batches times on it
    (global generators seeded with `seed`) and returns get_batch_checks of the batches, the last
    check from reads_little_of_a_memmap."""
    saved = _seed_globals(seed)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tokens.bin")
            dataset.numpy().astype(token_dtype).tofile(path)
            tokens = np.memmap(path, dtype=token_dtype, mode="r")
            batches = [get_batch(tokens, batch_size, context_length, "cpu") for _ in range(num_batches)]
            del tokens
            reads_little = reads_little_of_a_memmap(get_batch, tmp, context_length, token_dtype)
    finally:
        _restore_globals(saved)
    return get_batch_checks(dataset.numpy(), batches, batch_size, context_length, reads_little=reads_little)


GET_BATCH_GENERATOR_CHECKS = (
    "one seeded generator gives the same batches whatever the global generators' seeds",
    "consecutive calls with one generator draw different batches",
    "rows are independent draws: no one distance between two rows' starts recurs beyond chance",
)


def get_batch_generator_checks(
    get_batch, dataset: Tensor, batch_size: int, context_length: int, num_batches: int, seed: int
) -> Tensor:
    """get_batch(tokens, batch_size, context_length, "cpu", generator=g) num_batches times with g
    seeded by `seed`, twice
    (the global generators seeded differently each time); 1 or 0 for each of
    GET_BATCH_GENERATOR_CHECKS. dataset holds distinct ids, so a row's first token names its start."""
    tokens = dataset.numpy()

    def draws(global_seed: int) -> list:
        saved = _seed_globals(global_seed)
        try:
            g = torch.Generator().manual_seed(seed)
            return [get_batch(tokens, batch_size, context_length, "cpu", generator=g) for _ in range(num_batches)]
        finally:
            _restore_globals(saved)

    first, second = draws(seed + 1), draws(seed + 2)
    same = all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(first, second, strict=True))
    heads = [x[:, 0].tolist() for x, _ in first]
    fresh = len({tuple(h) for h in heads}) > 1
    position = {int(t): i for i, t in enumerate(tokens)}  # a row's first token names its start
    starts = np.array([[position.get(int(t), -1) for t in h] for h in heads])
    independent = starts_are_independent(starts, len(tokens) - context_length)
    return torch.tensor([int(same), int(fresh), int(independent)], dtype=torch.long)


def momentum_optimizer(params, lr: float = 1e-3, weight_decay: float = 0.01, momentum: float = 0.9):
    """The optimizer the checkpoint adapters and tests train with: heavy-ball momentum
    m <- momentum m + (1 - momentum) g, corrected by its step count t, with decoupled decay:
    p <- p (1 - lr wd) - lr m / (1 - momentum^t). Its state (m and t per parameter) and its
    param groups are what a checkpoint must bring back. Not one of torch.optim's: stepping those
    imports torch._dynamo, a second of CPU in every `pytest -k checkpoint`."""

    class MomentumSGD(torch.optim.Optimizer):  # local: the grader's worker accepts only plain functions here
        def __init__(self):
            super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum))

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in (p for p in group["params"] if p.grad is not None):
                    state = self.state[p]
                    state["step"] = state.get("step", 0) + 1
                    m = state.setdefault("m", torch.zeros_like(p))
                    m.mul_(group["momentum"]).add_(p.grad, alpha=1 - group["momentum"])
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    p.sub_(m, alpha=group["lr"] / (1 - group["momentum"] ** state["step"]))

    return MomentumSGD()


def _checkpoint_run(weights: dict[str, Tensor], lr: float, weight_decay: float):
    model = torch.nn.ParameterDict({k: torch.nn.Parameter(weights[k].clone()) for k in sorted(weights)})
    return model, momentum_optimizer(model.parameters(), lr=lr, weight_decay=weight_decay)


def _checkpoint_steps(
    model: torch.nn.ParameterDict, optimizer: torch.optim.Optimizer, gradients: dict[str, Tensor], steps: range
):
    for k in steps:
        for name, p in model.items():
            p.grad = gradients[name][k].clone()
        optimizer.step()


def checkpoint_resume(
    save_checkpoint,
    load_checkpoint,
    weights: dict[str, Tensor],
    gradients: dict[str, Tensor],
    steps_before: int,
    lr: float,
    weight_decay: float,
    to: str = "path",
) -> Tensor:
    """momentum_optimizer on a model holding `weights`, given gradients[name][k] at step k:
    steps_before steps, save_checkpoint(model, optimizer, iteration, out) to a path (`to="path"`)
    or an in-memory file object (`to="file"`), load_checkpoint(src, model, optimizer) into a fresh model (all zeros) and a fresh optimizer,
    then the remaining steps. Returns the iteration the load returned, then every parameter
    (names sorted) flattened, in the weights' dtype: the same as training without the stop."""
    total = next(iter(gradients.values())).shape[0]
    model, optimizer = _checkpoint_run(weights, lr, weight_decay)
    _checkpoint_steps(model, optimizer, gradients, range(steps_before))
    fresh, fresh_optimizer = _checkpoint_run({k: torch.zeros_like(v) for k, v in weights.items()}, lr, weight_decay)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "checkpoint.pt") if to == "path" else io.BytesIO()
        save_checkpoint(model, optimizer, steps_before, out)
        if to != "path":
            out.seek(0)
        iteration = load_checkpoint(out, fresh, fresh_optimizer)
    _checkpoint_steps(fresh, fresh_optimizer, gradients, range(steps_before, total))
    dtype = next(iter(weights.values())).dtype
    return torch.cat([torch.tensor([iteration], dtype=dtype), *(p.detach().reshape(-1) for p in fresh.values())])


CHECKPOINT_CHECKS = (
    "the iteration comes back as a Python int",
    "the weights come back",
    "into the model's own parameters",
    "the buffer comes back",
    "the optimizer's per-parameter state comes back",
    "every param group's hyper-parameters come back",
    "a checkpoint with an unexpected buffer is refused",
)


def _raises(call) -> bool:
    """Whether call() raises: any error is a refusal."""
    try:
        call()
    except Exception:  # noqa: BLE001 -- any error refuses it
        return True
    return False


def _buffered_run(weights: dict[str, Tensor], scale: Tensor, extra: bool = False):
    """A model with parameters named as `weights` and a buffer `scale` (in state_dict, not a
    parameter), with `extra` a second buffer; and momentum_optimizer on it in two param groups."""

    class WithBuffer(torch.nn.Module):  # local: the grader's worker accepts only plain functions here
        def __init__(self):
            super().__init__()
            for name, w in weights.items():
                self.register_parameter(name, torch.nn.Parameter(w.clone()))
            self.register_buffer("scale", scale.clone())
            if extra:
                self.register_buffer("extra", torch.zeros(2, dtype=scale.dtype))

    model = WithBuffer()
    params = list(model.parameters())
    groups = [{"params": params[:1], "lr": 1e-2}, {"params": params[1:], "lr": 3e-3, "weight_decay": 0.0}]
    return model, momentum_optimizer([g for g in groups if g["params"]])


def _state_back(model, optimizer, fresh, fresh_optimizer) -> bool:
    """Every entry of every parameter's optimizer state is equal in the fresh optimizer."""
    return all(
        all(torch.equal(torch.as_tensor(v), torch.as_tensor(fresh_optimizer.state.get(q, {}).get(key, torch.nan)))
            for key, v in optimizer.state[p].items())
        for p, q in zip(model.parameters(), fresh.parameters(), strict=True)
    )  # fmt: skip


def _groups_back(optimizer, fresh_optimizer) -> bool:
    """Every param group's hyper-parameters are equal in the fresh optimizer."""
    return all(
        all(g.get(key) == want[key] for key in want if key != "params")
        for want, g in zip(optimizer.param_groups, fresh_optimizer.param_groups, strict=True)
    )


def checkpoint_checks(
    save_checkpoint, load_checkpoint, weights: dict[str, Tensor], scale: Tensor, steps: int
) -> Tensor:
    """`steps` momentum_optimizer steps (two param groups, the first's lr changed as a schedule
    would) on a model with a buffer, save_checkpoint(model, optimizer, iteration, out) to a file
    object, load_checkpoint(src, model, optimizer) into a fresh model and optimizer: 1 for each
    of CHECKPOINT_CHECKS that holds."""
    model, optimizer = _buffered_run(weights, scale)
    for k in range(steps):
        for p in model.parameters():
            p.grad = torch.sin(p.detach() * (k + 1))
        optimizer.step()
        model.scale.mul_(0.5).add_(1.0)
    optimizer.param_groups[0]["lr"] = 4e-3
    zeros = {n: torch.zeros_like(w) for n, w in weights.items()}
    fresh, fresh_optimizer = _buffered_run(zeros, torch.zeros_like(scale))
    own = list(fresh.parameters())
    out = io.BytesIO()
    save_checkpoint(model, optimizer, steps, out)
    out.seek(0)
    iteration = load_checkpoint(out, fresh, fresh_optimizer)
    state_back = _state_back(model, optimizer, fresh, fresh_optimizer)
    groups_back = _groups_back(optimizer, fresh_optimizer)
    other, other_optimizer = _buffered_run(zeros, torch.zeros_like(scale), extra=True)
    out.seek(0)
    refused = _raises(lambda: load_checkpoint(out, other, other_optimizer))
    checks = [
        type(iteration) is int and iteration == steps,
        all(torch.equal(a, b) for a, b in zip(model.parameters(), fresh.parameters(), strict=True)),
        all(a is b for a, b in zip(own, fresh.parameters(), strict=True)),
        torch.equal(model.scale, fresh.scale),
        state_back,
        groups_back,
        refused,
    ]
    return torch.tensor([int(c) for c in checks], dtype=torch.int64)
