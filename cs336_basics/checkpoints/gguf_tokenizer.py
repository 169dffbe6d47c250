"""A byte-level BPE tokenizer (GPT-2 style, Radford et al. 2019) built from a GGUF file's own
vocabulary, merges and special tokens with the `tokenizers` library (nothing downloaded), and
the chat template the file carries (tokenizer.chat_template, a Jinja template)."""

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from cs336_basics.checkpoints.gguf import field

CONTROL = 3  # llama.cpp's token type for control (special) tokens


def tokenizer_from_gguf(reader) -> Tokenizer:
    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(f"only byte-level BPE tokenizers (tokenizer.ggml.model 'gpt2') are supported, got {model!r}")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    # SmolLM2's pre-tokenizer (llama.cpp's "smollm" pre-type, the model's tokenizer.json): digits
    # one at a time, then GPT-2's byte-level regex split.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    types = field(reader, "tokenizer.ggml.token_type")
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types, strict=True) if ty == CONTROL]
    )
    return tok


def apply_chat_template(reader, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """The file's chat template rendered for `messages` (SmolLM2: ChatML)."""
    from cs336_basics.checkpoints.chat_template import render_chat_template

    template = field(reader, "tokenizer.chat_template")
    if template is None:
        raise ValueError("the GGUF file has no tokenizer.chat_template")
    return render_chat_template(template, messages, add_generation_prompt)
