"""FLOPs of a TransformerLM, counting matrix multiplies only (2 m n p for an (m, n) @ (n, p)
product): elementwise work (norms, RoPE, softmax, SiLU, residuals) is lower order in d_model, so
norm and position change no count; ffn does (SwiGLU's W1, W3, W2 against the SiLU FFN's W1, W2).
Backward costs twice the forward (each product's gradient for both operands), so training costs
3x the forward pass (Kaplan et al. 2020: 6 N per token plus attention)."""

from dataclasses import dataclass

from cs336_basics.accounting.params import ffn_matrices, kv_width
from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig

PARTS = ("attention", "ffn", "lm_head")
# AdamW's arithmetic per parameter element (CS336 Algorithm 1): first moment 3 (two products, a
# sum), second moment 4 (g^2, two products, a sum), the update 5 (sqrt, + eps, quotient, x alpha_t,
# difference), decoupled weight decay 2 (x alpha lambda, difference). Scalars count nothing.
ADAMW_FLOPS_PER_PARAMETER = 14


@dataclass(frozen=True)
class Matmul:
    """One matrix multiply of the forward pass: `layers` copies of (rows, inner) @ (inner, cols)."""

    name: str
    part: str  # one of PARTS
    rows: int
    inner: int
    cols: int
    layers: int = 1

    @property
    def flops(self) -> int:
        return 2 * self.rows * self.inner * self.cols * self.layers


def forward_matmuls(c: TransformerLMConfig, batch: int, seq: int | None = None) -> list[Matmul]:
    """Every matrix multiply of a forward pass of `batch` sequences of `seq` tokens (default
    context_length). The attention scores are computed for all seq x seq pairs (the causal mask
    is applied after them), once per query head: batch x num_heads products of (seq, d_head). The
    FFN's are W1 and W2, with W3 (the gate's partner) only for SwiGLU."""
    T = seq or c.context_length
    d, L, d_head = c.d_model, c.num_layers, c.d_model // c.num_heads
    tokens, heads = batch * T, batch * c.num_heads
    gated = ffn_matrices(c) == 3  # SwiGLU: W2 (SiLU(W1 x) * W3 x); the SiLU FFN: W2 SiLU(W1 x)
    ffn_in = [Matmul("W1 (gate)" if gated else "W1", "ffn", tokens, d, c.d_ff, L)]
    ffn_in += [Matmul("W3 (up)", "ffn", tokens, d, c.d_ff, L)] if gated else []
    return [
        Matmul("Q projection", "attention", tokens, d, d, L),
        Matmul("K projection", "attention", tokens, d, kv_width(c), L),
        Matmul("V projection", "attention", tokens, d, kv_width(c), L),
        Matmul("Q K^T (scores)", "attention", heads * T, d_head, T, L),
        Matmul("scores @ V", "attention", heads * T, T, d_head, L),
        Matmul("output projection", "attention", tokens, d, d, L),
        *ffn_in,
        Matmul("W2 (down)", "ffn", tokens, c.d_ff, d, L),
        Matmul("LM head", "lm_head", tokens, d, c.vocab_size),
    ]


def forward_flops(c: TransformerLMConfig, batch: int = 1, seq: int | None = None) -> int:
    return sum(m.flops for m in forward_matmuls(c, batch, seq))


def flops_by_part(c: TransformerLMConfig, batch: int = 1, seq: int | None = None) -> dict[str, int]:
    return {part: sum(m.flops for m in forward_matmuls(c, batch, seq) if m.part == part) for part in PARTS}


def training_flops_per_token(c: TransformerLMConfig, seq: int | None = None) -> float:
    """Forward and backward FLOPs per token at sequence length seq: 3 x forward / seq."""
    T = seq or c.context_length
    return 3 * forward_flops(c, 1, T) / T


def adamw_step_flops(parameters: int) -> int:
    return ADAMW_FLOPS_PER_PARAMETER * parameters


def training_seconds(flops: float, mfu: float, peak_flops_per_s: float) -> float:
    """Time for `flops` at a model-FLOPs utilisation `mfu` of a peak of `peak_flops_per_s`."""
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    if not peak_flops_per_s > 0:
        raise ValueError(f"peak FLOP/s must be > 0, got {peak_flops_per_s!r}")
    return flops / (mfu * peak_flops_per_s)
