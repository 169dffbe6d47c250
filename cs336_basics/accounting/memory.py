"""Memory of training a TransformerLM with AdamW: parameters, gradients (one per parameter),
AdamW's state (two moments per parameter) and the activations kept for the backward pass, with
the activation terms CS336's adamwAccounting problem lists (per block: the RMSNorms, the Q/K/V
projections, Q K^T, the softmax, the weighted sum of values, the output projection and the FFN's
products and activation; then the final RMSNorm, the logits and the cross-entropy over them). The
SwiGLU FFN keeps W3's product and the gated product besides W1's, SiLU's and W2's; the SiLU FFN
(ffn = "silu") only W1's, SiLU's and W2's; norm = "none" keeps no RMSNorm output.

Peak memory is linear in the batch: a batch + b, a = activations of one sequence, b = parameters,
gradients and AdamW state."""

from dataclasses import dataclass

from cs336_basics.accounting.params import ffn_matrices, kv_width, parameter_count
from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig


def activation_terms(c: TransformerLMConfig, seq: int | None = None) -> dict[str, int]:
    """Elements kept per sequence of `seq` tokens (default context_length), by term, over all layers."""
    T, d, L, h = seq or c.context_length, c.d_model, c.num_layers, c.num_heads
    norms, gated = c.norm != "none", ffn_matrices(c) == 3
    terms = {
        "RMSNorms in blocks (2 per block)": L * 2 * T * d * norms,
        "Q, K, V projections": L * T * (d + 2 * kv_width(c)),
        "Q K^T": L * h * T * T,
        "softmax": L * h * T * T,
        "weighted sum of values": L * T * d,
        "output projection": L * T * d,
        "W1 product": L * T * c.d_ff,
        "SiLU": L * T * c.d_ff,
        "W3 product": L * T * c.d_ff * gated,
        "SiLU(W1 x) * W3 x": L * T * c.d_ff * gated,
        "W2 product": L * T * d,
        "final RMSNorm": T * d * norms,
        "logits (output embedding)": T * c.vocab_size,
        "cross-entropy (softmax of the logits)": T * c.vocab_size,
    }
    return {name: n for name, n in terms.items() if n}


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes of each kind; `per_sequence` is the activations of one sequence (a), `fixed` the rest (b)."""

    parameters: int
    gradients: int
    adamw_state: int
    per_sequence: int

    @property
    def fixed(self) -> int:
        return self.parameters + self.gradients + self.adamw_state

    def total(self, batch: int) -> int:
        return self.fixed + batch * self.per_sequence

    def largest_batch(self, budget_bytes: float) -> int:
        """The largest batch whose total fits in budget_bytes (0 if the fixed part alone does not)."""
        return max(0, int((budget_bytes - self.fixed) // self.per_sequence))


def training_memory(c: TransformerLMConfig, seq: int | None = None, bytes_per_element: int = 4) -> TrainingMemory:
    """Every tensor in one dtype of `bytes_per_element` bytes (float32: 4)."""
    n = parameter_count(c) * bytes_per_element
    return TrainingMemory(parameters=n, gradients=n, adamw_state=2 * n,
                          per_sequence=sum(activation_terms(c, seq).values()) * bytes_per_element)  # fmt: skip
