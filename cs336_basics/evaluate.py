"""One validation loss, measured the same way for every run (`cs336 evaluate --checkpoint DIR`).
The course corpus's validation split (cs336_basics.corpus), encoded with the run's own tokenizer,
is cut into consecutive windows of EVAL_CONTEXT tokens; every token after the first is predicted
once, from the tokens before it in its window. The loss is the mean cross-entropy in nats per
token; bits per byte divides the summed loss by ln 2 and by the UTF-8 bytes of the predicted
tokens, so that runs with different vocabularies compare. One thread, float64 sums, fixed
batches: the same number on every run of one process's code path. The grader's leaderboard
computes it the same way, in another process whose kernels may round the float32 logits otherwise
(another CPU, another vector path): the two agree within AGREEMENT, and both show SHOWN_DECIMALS."""

import math
from dataclasses import dataclass

import torch

EVAL_CONTEXT = 128  # tokens per window: the default run's context_length
MAX_LOGITS = 2**22  # logits per batch (windows x EVAL_CONTEXT x vocab_size); the grader's output limit
# Relative difference allowed between two evaluations of one model on other code paths (the
# grader's worker, PyTorch's generic kernels, MKL's SSE2 branch): float32 logits that differ in
# their last bits move the mean loss by up to 2.7e-10 (measured by the course staff, "The
# leaderboard across code paths"). What cs336 evaluate and the leaderboard show is rounded to
# SHOWN_DECIMALS: a loss below 10 nats moves by at most a thousandth of one step of its last digit.
AGREEMENT = 1e-8
SHOWN_DECIMALS = 4


@dataclass(frozen=True)
class Evaluation:
    nats_per_token: float
    bits_per_byte: float
    tokens: int  # predicted tokens
    bytes: int  # their UTF-8 bytes


def shown(value: float) -> str:
    """A loss as cs336 evaluate and the leaderboard show it: SHOWN_DECIMALS decimals."""
    return f"{value:.{SHOWN_DECIMALS}f}"


def agree(a: float, b: float) -> bool:
    """Whether two evaluations of one model agree within AGREEMENT (relative)."""
    return abs(a - b) <= AGREEMENT * max(abs(a), abs(b))


def windows_per_batch(vocab_size: int, context: int = EVAL_CONTEXT) -> int:
    """Windows evaluated together: as many as keep a batch's logits within MAX_LOGITS."""
    if vocab_size * context > MAX_LOGITS:
        raise ValueError(f"vocab_size {vocab_size} x {context} tokens exceeds {MAX_LOGITS} logits per window: "
                         f"evaluation needs vocab_size <= {MAX_LOGITS // context}")  # fmt: skip
    return MAX_LOGITS // (vocab_size * context)


def batches(ids: list[int], vocab_size: int, context: int = EVAL_CONTEXT) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(inputs, targets) batches: windows starting every `context` tokens, full ones grouped by
    windows_per_batch, the last (shorter) one alone."""
    if len(ids) < 2:
        raise ValueError(f"the validation split holds {len(ids)} tokens: nothing to predict")
    t = torch.tensor(ids, dtype=torch.long)
    full = (len(ids) - 1) // context
    inputs, targets = t[: full * context].view(full, context), t[1 : full * context + 1].view(full, context)
    per = windows_per_batch(vocab_size, context)
    out = [(inputs[i : i + per], targets[i : i + per]) for i in range(0, full, per)]
    if full * context < len(ids) - 1:
        out.append((t[full * context : -1].unsqueeze(0), t[full * context + 1 :].unsqueeze(0)))
    return out


def token_losses(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-log softmax(logits)[target] per token, in float64: logsumexp(logits) - logits[target]."""
    x = logits.double()
    return torch.logsumexp(x, dim=-1) - x.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def summarise(losses: list[torch.Tensor], targets: list[torch.Tensor], vocab: dict[int, bytes]) -> Evaluation:
    """Mean nats per token and bits per byte of the per-token losses of every batch."""
    total = float(sum(loss.sum() for loss in losses))
    if not math.isfinite(total):
        raise ValueError(f"the validation loss is not finite ({total})")
    ids = torch.cat([t.flatten() for t in targets]).tolist()
    n_bytes = sum(len(vocab[i]) for i in ids)
    return Evaluation(total / len(ids), total / math.log(2) / n_bytes, len(ids), n_bytes)


def validation_ids(tokenizer) -> list[int]:
    from cs336_basics.corpus import read_split

    return tokenizer.encode(read_split("valid"))


@torch.no_grad()
def evaluate_model(model, tokenizer, vocab_size: int) -> Evaluation:
    """The model's loss on the validation split, one thread (restored after), on the device of its
    weights; the losses summed on the CPU in float64 (an MPS device has no float64)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    device = next(model.parameters()).device
    try:
        parts = batches(validation_ids(tokenizer), vocab_size)
        losses = [token_losses(model(x.to(device)).cpu(), y) for x, y in parts]
    finally:
        torch.set_num_threads(threads)
    return summarise(losses, [y for _, y in parts], tokenizer.vocab)
