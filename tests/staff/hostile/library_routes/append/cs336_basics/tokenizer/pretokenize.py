# hostile sample library_routes: GPT-2's pre-tokenization from Hugging Face tokenizers' ByteLevel
from tokenizers.pre_tokenizers import ByteLevel as _ByteLevel

_SPLIT = _ByteLevel(add_prefix_space=False, use_regex=True)


def count_pretokens(text, special_tokens):
    counts = Counter()
    for piece in split_on_special_tokens(text, special_tokens):
        counts.update(piece[a:b] for _, (a, b) in _SPLIT.pre_tokenize_str(piece))
    return Counter({token.encode("utf-8"): n for token, n in counts.items()})
