"""What-if measurements for decoding: how fast one decode step of our TransformerLM would be if
parts of it were cut down, against transformers on the same SmolLM2-135M weights (float32, CPU,
one thread). Nothing here changes the package: each variant swaps functions of
cs336_basics.nn.functional and cs336_basics.nn._checks for the run and restores them after.

    uv run python benchmarks/decode_variants.py [--repeats 11] base nochecks nochecks+lean+fold

A variant is parts joined by "+":
  base       the package as it is
  nochecks   every argument check in nn/_checks.py a no-op
  no_NAME    the check nn._checks.NAME a no-op (no_rope, no_linear, ...)
  lean       the bare ops of rope (cos/sin gathered once per step), softmax (no fully masked rows),
             attention, rmsnorm and silu (no dtype casts): not correct for every input
  matmul     attention (checks, casts and softmax as they are) with plain @ in place of the folded
             products; K and V broadcast over the query heads of their group, so matmul copies them
  fold       grouped-query attention with each key/value head's query heads stacked along the
             queries axis and plain matmuls (one product per key/value head, nothing copied)
Each repeat times every variant, then transformers, in turn (--prefill tokens, then --steps
decode steps, CPU time); printed: median and best ms per step and transformers' median over each
variant's (> 1: ours faster)."""

import argparse
import math
import statistics
import time

import torch
from smollm2_pair import smollm2_pair

from cs336_basics.nn import _checks
from cs336_basics.nn import functional as F

ORIGINAL = {module: dict(vars(module)) for module in (F, _checks)}


def lean_softmax(x, dim=-1):
    exps = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


def lean_attention(Q, K, V, mask=None):
    scores = F._broadcast_matmul(Q * (1.0 / math.sqrt(Q.shape[-1])), K.mT)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return F._broadcast_matmul(F.softmax(scores, -1), V)


_gathered: dict = {}  # the positions tensor of this step -> its (cos, sin); one entry


def lean_rope(x, cos, sin, token_positions):
    key = (id(token_positions), id(cos))
    if key not in _gathered:
        _gathered.clear()
        _gathered[key] = (cos[token_positions], sin[token_positions], token_positions)
    c, s, _ = _gathered[key]
    pairs = x.unflatten(-1, (x.shape[-1] // 2, 2))
    x0, x1 = pairs[..., 0], pairs[..., 1]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)


def lean_rmsnorm(x, weight, eps=1e-5, cast_before_gain=False):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def folded_gqa(q, k, v, mask=None):
    num_kv_heads, queries = k.shape[-3], q.shape[-2]
    group = q.shape[-3] // num_kv_heads
    if mask is not None and mask.dim() != 2:
        return ORIGINAL[F]["grouped_query_attention"](q, k, v, mask)
    q = q.unflatten(-3, (num_kv_heads, group)).flatten(-3, -2)  # (..., kv_heads, group * queries, d_k)
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.mT
    if mask is not None:
        scores = scores.masked_fill(~mask.repeat(group, 1), float("-inf"))
    out = F.softmax(scores, -1) @ v
    return out.unflatten(-2, (group, queries)).flatten(-4, -3)


def matmul_attention(Q, K, V, mask=None):
    _checks.attention(Q, K, V, mask)
    scores = (Q * (1.0 / math.sqrt(Q.shape[-1]))) @ K.mT
    scores = scores.to(F._compute_dtype(scores))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return F.softmax(scores, dim=-1).to(V.dtype) @ V


KEEP = {"checked_once", "every_check", "kernel_check"}  # the switches, not checks
LEAN = {"softmax": lean_softmax, "scaled_dot_product_attention": lean_attention, "rope": lean_rope,
        "rmsnorm": lean_rmsnorm, "silu": lambda x: x * torch.sigmoid(x)}  # fmt: skip


def apply(variant: str) -> None:
    """Restore both modules, then swap in the variant's parts."""
    for module, names in ORIGINAL.items():
        vars(module).update(names)
    for part in variant.split("+"):
        if part == "nochecks":
            for name, value in ORIGINAL[_checks].items():
                if callable(value) and getattr(value, "__module__", "") == _checks.__name__ and name not in KEEP:
                    setattr(_checks, name, lambda *a, **k: None)
        elif part.startswith("no_"):
            setattr(_checks, part[3:], lambda *a, **k: None)
        elif part == "lean":
            vars(F).update(LEAN)
        elif part == "matmul":
            F.scaled_dot_product_attention = matmul_attention
        elif part == "fold":
            F.grouped_query_attention = folded_gqa
        elif part != "base":
            raise SystemExit(f"unknown part {part!r}")


def step_ms(run_steps, steps: int) -> float:
    start = time.process_time()
    run_steps()
    return (time.process_time() - start) / steps * 1000


def ours_run(model, prefill: int, steps: int) -> float:
    cache = model.new_kv_cache(prefill + steps + 1)
    model(torch.arange(prefill)[None] % 1000, kv_cache=cache)
    token = torch.tensor([[42]])
    return step_ms(lambda: [model(token, kv_cache=cache) for _ in range(steps)], steps)


def theirs_run(model, prefill: int, steps: int) -> float:
    from transformers import DynamicCache

    cache = DynamicCache()
    model(torch.arange(prefill)[None] % 1000, past_key_values=cache, use_cache=True)
    token = torch.tensor([[42]])
    positions = [torch.tensor([[prefill + i]]) for i in range(steps)]
    return step_ms(lambda: [model(token, past_key_values=cache, use_cache=True, position_ids=p, cache_position=p[0])
                            for p in positions], steps)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", default=["base", "nochecks"])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--prefill", type=int, default=40)
    parser.add_argument("--steps", type=int, default=48)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ours, theirs, _ = smollm2_pair()
    times: dict[str, list[float]] = {name: [] for name in [*args.variants, "transformers"]}
    with torch.inference_mode():
        ours_run(ours, args.prefill, 2), theirs_run(theirs, args.prefill, 2)  # warm up
        for _ in range(args.repeats):
            for variant in args.variants:
                apply(variant)
                times[variant].append(ours_run(ours, args.prefill, args.steps))
            apply("base")
            times["transformers"].append(theirs_run(theirs, args.prefill, args.steps))
    theirs_ms = statistics.median(times["transformers"])
    for name, ms in times.items():
        print(f"{name:40s} median {statistics.median(ms):6.2f} ms/step  best {min(ms):6.2f}  "
              f"transformers/ours {theirs_ms / statistics.median(ms):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
