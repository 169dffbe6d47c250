"""Load a local Hugging Face Llama-family checkpoint directory (config.json + *.safetensors,
optionally tokenizer.json and tokenizer_config.json) into our TransformerLM. Nothing is
downloaded."""

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from cs336_basics.nn import convert
from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig


def config_from_hf(cfg: dict) -> TransformerLMConfig:
    theta = cfg.get("rope_theta") or (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)
    return TransformerLMConfig(
        vocab_size=cfg["vocab_size"], context_length=cfg.get("max_position_embeddings", 2048),
        d_model=cfg["hidden_size"], num_layers=cfg["num_hidden_layers"], num_heads=cfg["num_attention_heads"],
        d_ff=cfg["intermediate_size"], rope_theta=theta,
        num_kv_heads=cfg.get("num_key_value_heads") or cfg["num_attention_heads"],
        eps=cfg.get("rms_norm_eps", 1e-5), tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
    )  # fmt: skip


def load_hf_dir(path, dtype=torch.float32):
    """(model, tokenizer or None, chat template or None, eos ids). Bad input raises ValueError in one line."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise ValueError(f"no config.json in {path}")
    try:
        cfg = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:  # JSONDecodeError is a ValueError: name the file
        raise ValueError(f"cannot read the checkpoint in {path} (config.json: {e})") from None
    if not isinstance(cfg, dict):
        raise ValueError(
            f"cannot read the checkpoint in {path} (config.json must hold an object, got {type(cfg).__name__})"
        )
    try:
        files = sorted(path.glob("*.safetensors"))
        if not files:
            raise ValueError(f"no *.safetensors weights in {path}")
        tensors = {}
        for f in files:
            tensors |= load_file(f)
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"cannot read the checkpoint in {path} ({type(e).__name__}: {e})") from None
    if cfg.get("model_type") not in ("llama", "mistral", "qwen2", None) and "llama" not in str(
        cfg.get("architectures")
    ):
        raise ValueError(
            f"only Llama-family checkpoints are supported, config.json has model_type {cfg.get('model_type')!r}"
        )
    model = convert.load_pretrained(config_from_hf(cfg), tensors, "hf", dtype)
    tokenizer, template = None, None
    if (path / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    if (path / "tokenizer_config.json").is_file():
        template = json.loads((path / "tokenizer_config.json").read_text()).get("chat_template")
    eos = cfg.get("eos_token_id")
    eos_ids = eos if isinstance(eos, list) else ([] if eos is None else [eos])
    return model.eval(), tokenizer, template, eos_ids
