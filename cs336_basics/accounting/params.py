"""Parameters of a TransformerLM by part, from its configuration (every setting of it): the token
embedding V d; per layer attention d (d + 2 d_kv) + d d (Q, K, V, output; d_kv = num_kv_heads
d_head), the FFN f d d_ff (f = ffn_matrices: SwiGLU's W1, W2, W3, or the SiLU FFN's W1, W2) and
two norms of n parameters each; the final norm n; the LM head V d unless tied to the embedding.
RoPE has no parameters. n is the norm kind's own count (RMSNorm's gain: n = d), read off one norm
its table entry builds, and 0 with norm = "none" (no norm at all)."""

from cs336_basics.nn.modules.registry import NORMS
from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig

# f: the FFN's d_model x d_ff matrices, by TransformerLMConfig.ffn
FFN_MATRICES = {"swiglu": 3, "silu": 2}


def kv_width(c: TransformerLMConfig) -> int:
    """d_kv: the width of the keys (and values), num_kv_heads x d_head."""
    return (c.num_kv_heads or c.num_heads) * (c.d_model // c.num_heads)


def ffn_matrices(c: TransformerLMConfig) -> int:
    """f: the FFN's weight matrices of d_model x d_ff each (3 for SwiGLU, 2 for the SiLU FFN)."""
    if c.ffn not in FFN_MATRICES:
        raise ValueError(f"ffn must be one of {list(FFN_MATRICES)}, got {c.ffn!r}")
    return FFN_MATRICES[c.ffn]


def norm_parameters(c: TransformerLMConfig) -> int:
    """n: the parameters of one norm of kind c.norm_type over d_model, built on the meta device (no
    storage); 0 with norm = "none"."""
    if c.norm == "none":
        return 0
    return sum(p.numel() for p in NORMS[c.norm_type](c.d_model, eps=c.eps, device="meta").parameters())


def parameters_by_part(c: TransformerLMConfig) -> dict[str, int]:
    """{"embedding", "attention", "ffn", "norms", "lm_head"}: parameter counts over all layers."""
    d, L = c.d_model, c.num_layers
    return {
        "embedding": c.vocab_size * d,
        "attention": L * (2 * d * d + 2 * d * kv_width(c)),
        "ffn": L * ffn_matrices(c) * d * c.d_ff,
        "norms": (2 * L + 1) * norm_parameters(c),
        "lm_head": 0 if c.tie_embeddings else c.vocab_size * d,
    }


def parameter_count(c: TransformerLMConfig) -> int:
    """The sum of parameters_by_part."""
    return sum(parameters_by_part(c).values())
