"""Load Hugging Face-, Meta- or GGUF-named state dicts into our modules, and rename back.

One map per model (torchtitan's state_dict_adapter): our module path within a decoder layer ->
theirs. Llama's (Hugging Face, Meta and GGUF names, whole model) is convert_llama.LAYER_NAMES and
TOP_NAMES; GPT-NeoX's and GPT-2's (Hugging Face names) cover the FFN sub-block, the part of those
models built here (`_FFN_MAPS`). A parameter keeps its own name (weight, bias) under the renamed
path. GPT-2's Conv1D stores its weight as (in, out); our Linear stores (out, in) like
torch.nn.Linear, so those weights are transposed on the way in and out.

Decoder modules (attention, block, language model) load through convert_llama.to_ours. The FFN
sub-block and its parts take two kinds of names from a map:
  block  (FFNBlock, x + ffn(ln2(x))):  post_attention_layernorm.weight -> ln2.weight,
         mlp.gate_proj.weight -> ffn.w1.weight. They match a whole key or its dotted suffix, and
         the prefix is kept: model.layers.3.mlp.up_proj.weight -> model.layers.3.ffn.w3.weight.
  module (a bare FFN or norm):  gate_proj.weight -> w1.weight, weight -> weight: the block names
         without their first path component. These match the whole key only (as a suffix
         `weight` would match anything).
A key that matches no name is an error that names it.
"""

import torch
from torch import Tensor, nn

from cs336_basics.nn import convert_llama

# The FFN sub-block of the models whose FFN blocks (not decoders) load here, Hugging Face names:
# our module path: (theirs, weight stored transposed). Llama's is LAYER_NAMES' ln2 and ffn entries.
_FFN_MAPS: dict[str, dict[str, tuple[str, bool]]] = {
    "gpt_neox": {
        "ln2": ("post_attention_layernorm", False),
        "ffn.w1": ("mlp.dense_h_to_4h", False),
        "ffn.w2": ("mlp.dense_4h_to_h", False),
    },
    "gpt2": {
        "ln2": ("ln_2", False),
        "ffn.w1": ("mlp.c_fc", True),  # Conv1D: (d_model, d_ff), ours (d_ff, d_model)
        "ffn.w2": ("mlp.c_proj", True),
    },
}
ARCHS = ("llama", *_FFN_MAPS)
PARAMS = ("weight", "bias")
NAMINGS = ("ours", "meta", "hf", "gguf")

# Hugging Face `hidden_act` / `activation_function` -> our activation name (functional.ACTIVATIONS).
HF_ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",  # GELUActivation: torch's exact erf GELU
    "gelu_new": "gelu_tanh",  # NewGELUActivation (GPT-2): the tanh approximation
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}


def activation_from_hf(name: str) -> str:
    """Our activation name for a Hugging Face activation name ("gelu_new" -> "gelu_tanh")."""
    if name not in HF_ACTIVATIONS:
        raise ValueError(f"unknown Hugging Face activation {name!r}; known names are {sorted(HF_ACTIVATIONS)}")
    return HF_ACTIVATIONS[name]


def _ffn_map(arch: str, naming: str = "hf") -> dict[str, tuple[str, bool]]:
    """Our FFN sub-block's module paths -> (`arch`'s in `naming`, transposed)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown arch {arch!r}; valid names are {list(ARCHS)}")
    if arch != "llama":
        return _FFN_MAPS[arch]
    col = convert_llama.COLUMNS.index(naming)
    return {
        ours.removesuffix(".weight"): (names[col].removesuffix(".weight"), False)
        for ours, names in convert_llama.LAYER_NAMES.items()
        if ours.startswith(("ln2.", "ffn."))
    }


def _tables(arch: str, naming: str = "hf") -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, bool]]]:
    """(block names, module names) of `arch` in `naming`, each entry (their name, our name, transposed)."""
    block, module = [], []
    for ours, (theirs, transposed) in _ffn_map(arch, naming).items():
        for p in PARAMS:
            block.append((f"{theirs}.{p}", f"{ours}.{p}", transposed and p == "weight"))
            module.append(
                (f"{theirs}.{p}".split(".", 1)[1], f"{ours}.{p}".split(".", 1)[1], transposed and p == "weight")
            )
    return block, module


def _rename(
    state_dict: dict[str, Tensor], block: list[tuple[str, str, bool]], module: list[tuple[str, str, bool]], what: str
) -> dict[str, Tensor]:
    """Rename every key by the first (src, dst, transposed) entry that matches it; see the module docstring."""
    exact = {src: (dst, t) for src, dst, t in module + block}
    out, unknown = {}, []
    for key, value in state_dict.items():
        if key in exact:
            new_key, transposed = exact[key]
        else:
            hit = next(((src, dst, t) for src, dst, t in block if key.endswith("." + src)), None)
            if hit is None:
                unknown.append(key)
                continue
            src, dst, transposed = hit
            new_key = key[: -len(src)] + dst
        out[new_key] = value.t().contiguous() if transposed else value
    if unknown:
        known = sorted(exact)
        raise ValueError(
            f"{what}: no name matches {unknown}; known names are {known} "
            f"(block names may carry a prefix such as 'model.layers.0.')"
        )
    return out


def _renamed(state_dict: dict[str, Tensor], arch: str, naming: str, to_ours: bool) -> dict[str, Tensor]:
    block, module = _tables(arch, naming)
    if not to_ours:
        block, module = ([(ours, theirs, t) for theirs, ours, t in entries] for entries in (block, module))
    what = f"{'from' if to_ours else 'to'}_{naming}(arch={arch!r})"
    return _rename(state_dict, block, module, what)


def from_hf(state_dict: dict[str, Tensor], arch: str = "llama") -> dict[str, Tensor]:
    """Hugging Face names of an FFN sub-block or its parts -> ours, e.g. mlp.gate_proj.weight -> ffn.w1.weight."""
    return _renamed(state_dict, arch, "hf", to_ours=True)


def to_hf(state_dict: dict[str, Tensor], arch: str = "llama") -> dict[str, Tensor]:
    """Our names -> Hugging Face's; the inverse of from_hf."""
    return _renamed(state_dict, arch, "hf", to_ours=False)


def from_meta(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """Meta llama's names of an FFN sub-block or its parts -> ours, e.g. ffn_norm.weight -> ln2.weight,
    feed_forward.w1.bias -> ffn.w1.bias (a parameter keeps its own name)."""
    return _renamed(state_dict, "llama", "meta", to_ours=True)


def to_meta(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """Our names -> Meta llama's; the inverse of from_meta."""
    return _renamed(state_dict, "llama", "meta", to_ours=False)


def _decoder_attention(module: nn.Module):
    """The first MultiHeadSelfAttention in `module` (itself included), or None."""
    from cs336_basics.nn.modules.attention import MultiHeadSelfAttention

    return next((m for m in module.modules() if isinstance(m, MultiHeadSelfAttention)), None)


def load_pretrained(config, state_dict: dict[str, Tensor], naming: str, dtype: torch.dtype = torch.float32):
    """A TransformerLM(config) in `dtype` holding `state_dict` (names of `naming`, see
    load_state_dict): built on the meta device, so no random init of weights about to be
    overwritten, then materialised on the CPU."""
    from cs336_basics.nn.modules.transformer_lm import TransformerLM

    with torch.device("meta"):
        model = TransformerLM(config, dtype=dtype)
    model = model.to_empty(device="cpu")
    return load_state_dict(model, {k: v.to(dtype) for k, v in state_dict.items()}, naming=naming)


def load_state_dict(
    module: nn.Module, state_dict: dict[str, Tensor], naming: str = "ours", arch: str = "llama"
) -> nn.Module:
    """Rename `state_dict` from `naming` ("ours", "meta": Meta llama's names, or "hf": those of
    `arch`) and load it strictly. Decoder modules (attention, block, language model) take Llama
    names: naming "hf", "meta" or "gguf" (see convert_llama). Every missing key, unexpected key
    and shape mismatch is checked before anything is copied, so a failed load leaves the module
    untouched."""
    if naming not in NAMINGS:
        raise ValueError(f"unknown naming {naming!r}; valid names are {list(NAMINGS)}")
    attn = _decoder_attention(module)
    if attn is not None and naming != "ours":  # a decoder: Llama names (convert_llama), with q/k rows reordered
        tied = getattr(module, "lm_head", False) is None
        renamed = convert_llama.to_ours(state_dict, naming, attn.num_heads, attn.num_kv_heads, tied)
    elif naming == "gguf":
        raise ValueError(
            f"naming 'gguf' is for decoder modules (attention, block, language model), not {type(module).__name__}"
        )
    else:
        rename = {"ours": dict, "meta": from_meta, "hf": lambda sd: from_hf(sd, arch)}[naming]
        renamed = rename(state_dict)
    expected = module.state_dict()
    missing, unexpected = sorted(expected.keys() - renamed.keys()), sorted(renamed.keys() - expected.keys())
    problems = [f"missing keys {missing}"] if missing else []
    problems += [f"unexpected keys {unexpected}"] if unexpected else []
    problems += [
        f"{k}: shape {tuple(renamed[k].shape)}, expected {tuple(expected[k].shape)}"
        for k in sorted(expected.keys() & renamed.keys())
        if tuple(renamed[k].shape) != tuple(expected[k].shape)
    ]
    if problems:
        names = "our names" if naming != "hf" else f"our names, renamed from hf arch={arch!r}"
        raise ValueError(f"cannot load into {type(module).__name__} ({names}): " + "; ".join(problems))
    module.load_state_dict(renamed, strict=True)
    return module
