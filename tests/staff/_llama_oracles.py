"""Hugging Face transformers' Llama modules as oracles for the decoder: built from a tiny config
(never downloaded), random weights, eager attention, copied into ours through
cs336_basics.nn.convert (which reorders HF's rotate-half q/k rows into adjacent pairs)."""

from types import SimpleNamespace

import torch

from cs336_basics.nn import convert


def import_hf() -> SimpleNamespace:
    """Hugging Face transformers (staff only: the handout does not install it)."""
    import transformers
    from transformers.models.llama import modeling_llama as ml

    return SimpleNamespace(transformers=transformers, ml=ml)


def llama_config(hf, d_model=48, num_heads=4, num_kv_heads=2, d_ff=136, vocab_size=97, theta=500.0,
                 eps=1e-5, num_layers=2, max_pos=64, tie=False):  # fmt: skip
    config = hf.transformers.LlamaConfig(
        hidden_size=d_model, intermediate_size=d_ff, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        vocab_size=vocab_size, rope_theta=theta, rms_norm_eps=eps, num_hidden_layers=num_layers,
        max_position_embeddings=max_pos, tie_word_embeddings=tie, hidden_act="silu", attention_bias=False,
        mlp_bias=False,
    )  # fmt: skip
    config._attn_implementation = "eager"  # the textbook softmax(QK^T/sqrt(d) + mask) V, in float32 on CPU
    return config


def seeded(seed: int, build):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build()


def randomise_norms_(module) -> None:
    """RMSNorm gains start at ones: make them non-unit so a skipped gain shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.5 * torch.randn_like(p))


def hf_attn(hf, config, seed=0):
    return seeded(seed, lambda: hf.ml.LlamaAttention(config, layer_idx=0).eval())


def hf_layer(hf, config, seed=0):
    def build():
        layer = hf.ml.LlamaDecoderLayer(config, layer_idx=0).eval()
        randomise_norms_(layer)
        return layer

    return seeded(seed, build)


def hf_model(hf, config, seed=0):
    def build():
        model = hf.ml.LlamaForCausalLM(config).eval()
        with torch.no_grad():
            for p in model.parameters():  # HF's init (std 0.02) is too tame to separate mistakes
                p.normal_(std=0.3) if p.dim() == 2 else p.copy_(1 + 0.5 * torch.randn_like(p))
        return model

    return seeded(seed, build)


def position_embeddings(hf, config, x, position_ids):
    """HF's (cos, sin) for position_ids (batch, seq)."""
    return hf.ml.LlamaRotaryEmbedding(config)(x, position_ids)


def causal_additive_mask(seq: int, dtype=torch.float32):
    """(1, 1, seq, seq): 0 where a query may attend, -inf elsewhere (HF's eager attention adds it)."""
    allowed = torch.ones(seq, seq, dtype=torch.bool).tril()
    return torch.zeros(seq, seq, dtype=dtype).masked_fill(~allowed, float("-inf"))[None, None]


def hf_attn_forward(hf, config, attn, x, position_ids):
    with torch.no_grad():
        out, _ = attn(x, position_embeddings(hf, config, x, position_ids), causal_additive_mask(x.shape[-2], x.dtype))
    return out


def hf_layer_forward(hf, config, layer, x, position_ids):
    with torch.no_grad():
        return layer(x, attention_mask=causal_additive_mask(x.shape[-2], x.dtype), position_ids=position_ids,
                     position_embeddings=position_embeddings(hf, config, x, position_ids))  # fmt: skip


def ours_from(hf_module, ours):
    return convert.load_state_dict(ours, hf_module.state_dict(), naming="hf")
