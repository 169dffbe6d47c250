"""The text `cs336 account` prints: parameters by part, the forward pass's matrix multiplies and
their FLOPs, training FLOPs per token, memory as a batch + b, the largest batch for a budget and
the time to train for a number of steps at a stated MFU and peak."""

from dataclasses import dataclass

from cs336_basics.accounting import flops as FL
from cs336_basics.accounting.memory import activation_terms, training_memory
from cs336_basics.accounting.params import parameter_count, parameters_by_part
from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig


@dataclass(frozen=True)
class Budget:
    """What the memory and time lines assume: bytes per element, a memory budget (bytes), and a
    training run of `steps` steps of `batch` sequences at `mfu` of `peak_flops` FLOP/s."""

    bytes_per_element: int = 4
    memory_bytes: float = 80e9
    batch: int = 1
    steps: int = 0
    mfu: float = 0.5
    peak_flops: float = 19.5e12


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "    -"


def parameter_lines(c: TransformerLMConfig) -> list[str]:
    parts, total = parameters_by_part(c), parameter_count(c)
    lines = [f"parameters: {total:,}"]
    lines += [f"  {name:<12} {n:>16,}  {_share(n, total)}" for name, n in parts.items()]
    return lines


def flop_lines(c: TransformerLMConfig, batch: int) -> list[str]:
    matmuls = FL.forward_matmuls(c, batch)
    total = sum(m.flops for m in matmuls)
    lines = [f"forward FLOPs, batch {batch} x {c.context_length} tokens: {total:.4e}"]
    for m in matmuls:
        shape = f"{m.layers} x ({m.rows}, {m.inner}) @ ({m.inner}, {m.cols})"
        lines.append(f"  {m.name:<18} {shape:<42} {m.flops:.4e}  {_share(m.flops, total)}")
    lines += [f"  share of {part:<17} {_share(n, total)}" for part, n in FL.flops_by_part(c, batch).items()]
    lines.append(f"training FLOPs per token (3 x forward): {FL.training_flops_per_token(c):.4e}")
    lines.append(f"AdamW step FLOPs ({FL.ADAMW_FLOPS_PER_PARAMETER} per parameter): "
                 f"{FL.adamw_step_flops(parameter_count(c)):.4e}")  # fmt: skip
    return lines


def memory_lines(c: TransformerLMConfig, b: Budget) -> list[str]:
    mem = training_memory(c, bytes_per_element=b.bytes_per_element)
    gb = 1e9
    lines = [f"memory ({b.bytes_per_element} bytes per element; GB = 10^9 bytes):"]
    for name, n in (("parameters", mem.parameters), ("gradients", mem.gradients), ("AdamW state", mem.adamw_state)):
        lines.append(f"  {name:<12} {n / gb:12.3f} GB")
    lines.append(f"  activations {mem.per_sequence / gb:12.3f} GB per sequence:")
    for name, n in activation_terms(c).items():
        lines.append(f"    {name:<38} {n * b.bytes_per_element / gb:10.4f} GB")
    lines.append(f"  peak = {mem.per_sequence / gb:.4f} GB x batch + {mem.fixed / gb:.3f} GB;"
                 f" batch {b.batch}: {mem.total(b.batch) / gb:.3f} GB")  # fmt: skip
    lines.append(f"  largest batch in {b.memory_bytes / gb:g} GB: {mem.largest_batch(b.memory_bytes)}")
    return lines


def time_lines(c: TransformerLMConfig, b: Budget) -> list[str]:
    if not b.steps:
        return []
    step = 3 * FL.forward_flops(c, b.batch) + FL.adamw_step_flops(parameter_count(c))
    seconds = FL.training_seconds(b.steps * step, b.mfu, b.peak_flops)
    return [f"training {b.steps:,} steps of batch {b.batch} ({b.steps * b.batch * c.context_length:.3e} tokens): "
            f"{b.steps * step:.4e} FLOPs, {seconds / 86400:.1f} days at {b.mfu:.0%} MFU of {b.peak_flops:.3g} FLOP/s"]  # fmt: skip


def report(c: TransformerLMConfig, budget: Budget, title: str = "") -> str:
    head = [title] if title else []
    head.append(f"d_model {c.d_model}, {c.num_layers} layers, {c.num_heads} heads, d_ff {c.d_ff}, "
                f"vocab {c.vocab_size}, context {c.context_length}; norm {c.norm} ({c.norm_type}), "
                f"position {c.position}, ffn {c.ffn}")  # fmt: skip
    body = parameter_lines(c) + flop_lines(c, budget.batch) + memory_lines(c, budget) + time_lines(c, budget)
    return "\n".join(head + body)
