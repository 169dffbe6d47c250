"""Training throughput of the reference (our TransformerLM, cross_entropy and AdamW) against the same
model built from PyTorch built-ins (nn.Embedding, nn.Linear, nn.RMSNorm, F.silu,
F.scaled_dot_product_attention, F.cross_entropy, torch.optim.AdamW), as a ratio measured in one run.

    uv run python benchmarks/train.py [--steps 20 --batch 32 --context 128 --threads 0]

Both start from the same weights (ours, copied into the built-in one; the first losses agree to
float32 rounding, printed as a check) and take the same batches; their steps alternate, so the
machine's load falls on both alike. Each step is one training step as `cs336 train` takes it:
forward, loss, backward, gradient clipping (ours in both), optimizer step. Reported: the median
step's wall and CPU time, tokens/s, and ours / built-ins (>= 1 means ours is at least as fast).
The model is `cs336 train`'s default configuration (cs336_basics/train/config.py).
`--parts` also times, the same way, where the difference goes: one layer's attention, RMSNorm,
the loss and the optimizer step, ours against the built-in, forward + backward."""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from cs336_basics.nn import functional as ours_F
from cs336_basics.nn.modules import TransformerLM
from cs336_basics.optim import AdamW, gradient_clipping
from cs336_basics.train.config import TrainConfig


class BuiltinBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, eps: float):
        super().__init__()
        self.num_heads = num_heads
        self.ln1, self.ln2 = nn.RMSNorm(d_model, eps=eps), nn.RMSNorm(d_model, eps=eps)
        self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = (p(h).view(b, s, self.num_heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(a)
        h = self.ln2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def rotate(x, cos, sin):
    """RoPE on adjacent pairs (x[2k], x[2k+1]), as cs336_basics.nn.functional.rope (no built-in exists)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class BuiltinLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.layers = nn.ModuleList(BuiltinBlock(c.d_model, c.num_heads, c.d_ff, c.eps) for _ in range(c.num_layers))
        self.norm = nn.RMSNorm(c.d_model, eps=c.eps)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        half = c.d_model // c.num_heads // 2
        inv = c.rope_theta ** (-torch.arange(half, dtype=torch.float64) / half)
        angles = torch.arange(c.context_length, dtype=torch.float64)[:, None] * inv
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, ids):
        x, s = self.embed(ids), ids.shape[-1]
        for layer in self.layers:
            x = layer(x, self.cos[:s], self.sin[:s])
        return self.head(self.norm(x))

    def load_ours(self, sd: dict) -> "BuiltinLM":
        names = {
            "embed.weight": "token_embeddings.weight",
            "norm.weight": "ln_final.weight",
            "head.weight": "lm_head.weight",
        }
        for i in range(len(self.layers)):
            for new, old in (("ln1", "ln1"), ("ln2", "ln2"), ("q", "attn.q_proj"), ("k", "attn.k_proj"), ("v", "attn.v_proj"),
                             ("o", "attn.output_proj"), ("w1", "ffn.w1"), ("w2", "ffn.w2"), ("w3", "ffn.w3")):  # fmt: skip
                names[f"layers.{i}.{new}.weight"] = f"layers.{i}.{old}.weight"
        self.load_state_dict({new: sd[old] for new, old in names.items()})
        return self


def _median_cpu_ms(fn, repeats: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeats):
        c0 = time.process_time()
        fn()
        times.append(time.process_time() - c0)
    return statistics.median(times) * 1e3


def parts(c, batch: int, context: int, ours: TransformerLM, hyper: dict) -> None:
    """Median CPU ms of each part, forward + backward, ours against the built-in."""
    g = torch.Generator().manual_seed(2)
    d_k, heads = c.d_model // c.num_heads, c.num_heads
    q, k, v = (torch.randn(batch, heads, context, d_k, generator=g).requires_grad_() for _ in range(3))
    mask = torch.ones(context, context, dtype=torch.bool).tril()
    x = torch.randn(batch, context, c.d_model, generator=g).requires_grad_()
    gain = torch.ones(c.d_model, requires_grad=True)
    logits = torch.randn(batch * context, c.vocab_size, generator=g).requires_grad_()
    targets = torch.randint(0, c.vocab_size, (batch * context,), generator=g)
    for p in ours.parameters():
        p.grad = torch.randn(p.shape, generator=g)
    pairs = {
        "attention (one layer)": (
            lambda: ours_F.scaled_dot_product_attention(q, k, v, mask).sum().backward(),
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward(),
        ),
        "  its two matmuls alone": (lambda: ((q @ k.mT) @ v).sum().backward(), None),
        "rmsnorm (one)": (
            lambda: ours_F.rmsnorm(x, gain, c.eps).sum().backward(),
            lambda: F.rms_norm(x, (c.d_model,), gain, c.eps).sum().backward(),
        ),
        "cross_entropy": (
            lambda: ours_F.cross_entropy(logits, targets).backward(),
            lambda: F.cross_entropy(logits, targets).backward(),
        ),
        "optimizer step": (AdamW(ours.parameters(), **hyper).step, torch.optim.AdamW(ours.parameters(), **hyper).step),
    }
    print("parts, median CPU ms (ours / built-in):")
    for name, (mine, builtin) in pairs.items():
        theirs = f"{_median_cpu_ms(builtin):8.1f}" if builtin else "       -"
        print(f"  {name:<24} {_median_cpu_ms(mine):8.1f} {theirs}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=None, help="default: cs336 train's batch_size")
    p.add_argument("--context", type=int, default=None, help="default: cs336 train's context_length")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    p.add_argument("--parts", action="store_true", help="also time attention, RMSNorm, the loss and AdamW alone")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = TrainConfig()
    c = config.model_config()
    batch, context = args.batch or config.batch_size, args.context or config.context_length
    torch.manual_seed(0)
    ours = TransformerLM(c)
    builtin = BuiltinLM(c).load_ours(ours.state_dict())
    hyper = dict(lr=1e-3, betas=(config.beta1, config.beta2), eps=config.eps, weight_decay=config.weight_decay)
    runs = {
        "ours": (ours, AdamW(ours.parameters(), **hyper), ours_F.cross_entropy),
        "built-ins": (builtin, torch.optim.AdamW(builtin.parameters(), **hyper), F.cross_entropy),
    }
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, c.vocab_size, (batch, context + 1), generator=g) for _ in range(args.steps + 2)]
    times = {name: [] for name in runs}
    first_loss = {}
    for i, ids in enumerate(batches):
        x, y = ids[:, :-1], ids[:, 1:]
        for name, (model, opt, loss_fn) in runs.items():
            t, c0 = time.perf_counter(), time.process_time()
            loss = loss_fn(model(x).reshape(-1, c.vocab_size), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gradient_clipping(model.parameters(), config.max_grad_norm)
            opt.step()
            if i >= 2:  # two warm-up steps
                times[name].append((time.perf_counter() - t, time.process_time() - c0))
            first_loss.setdefault(name, loss.item())
    tokens = batch * context
    n_params = sum(p.numel() for p in ours.parameters())
    print(f"{n_params:,} parameters, batch {batch} x {context} tokens, {torch.get_num_threads()} threads, "
          f"{args.steps} steps each (alternating); first losses {first_loss['ours']:.6f} / {first_loss['built-ins']:.6f}")  # fmt: skip
    speed = {}
    for name, ts in times.items():
        wall, cpu = statistics.median(t for t, _ in ts), statistics.median(c for _, c in ts)
        speed[name] = (tokens / wall, tokens / cpu)
        print(f"{name:>10}: {wall * 1e3:8.1f} ms/step wall, {cpu * 1e3:8.1f} ms CPU, {speed[name][0]:8.0f} tokens/s")
    print(f"ours / built-ins: {speed['ours'][0] / speed['built-ins'][0]:.2f} (tokens/s, wall), "
          f"{speed['ours'][1] / speed['built-ins'][1]:.2f} (tokens per CPU second)")  # fmt: skip
    if args.parts:
        parts(c, batch, context, ours, hyper)


if __name__ == "__main__":
    main()
