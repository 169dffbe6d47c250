"""Independent oracles: this package's kernels written with PyTorch's built-ins, with the same
signatures. None of this is our code path; the reference must agree with it.

`builtin_kernels()` swaps them into `cs336_basics.nn.functional` for a `with` block, so any
adapter or module then computes with PyTorch's built-ins through the same plumbing (weight
loading, reshapes): that is how a whole case is checked against an oracle. Each kernel's entry
of `BUILTIN_KERNELS` also declares what tests/test_dtypes.py needs to run it in every dtype: the
arguments it takes after x, its rows of tests/floors.py's kernel tables, and whether it computes
half precision in float32.
"""

import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as TF

import cs336_basics.data as data
import cs336_basics.serialization as serialization
from cs336_basics import optim
from cs336_basics.nn import functional as F

ACTIVATIONS = {
    "silu": TF.silu,
    "gelu": TF.gelu,
    "gelu_tanh": lambda x: TF.gelu(x, approximate="tanh"),
    "relu": TF.relu,
}


def swiglu_ffn(x, w1, w2, w3, activation="silu"):
    """W2(act(W1 x) * W3 x) with F.linear, like functional.swiglu_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1)) * TF.linear(x, w3), w2)


def positionwise_ffn(x, w1, b1, w2, b2, activation="gelu"):
    """act(x W1^T + b1) W2^T + b2 with F.linear, like functional.positionwise_ffn."""
    return TF.linear(ACTIVATIONS[activation](TF.linear(x, w1, b1)), w2, b2)


def sdpa(Q, K, V, mask=None):
    """torch's fused scaled dot-product attention (a fully masked row gives NaN there)."""
    return TF.scaled_dot_product_attention(Q, K, V, attn_mask=mask)


def rope_complex(x, theta, token_positions):
    """RoPE as Meta's llama writes it: adjacent pairs as complex numbers, times e^{i angle}
    (llama/model.py, precompute_freqs_cis and apply_rotary_emb), in float64."""
    d = x.shape[-1]
    freqs = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = token_positions.to(torch.float64)[..., None] * freqs  # (..., seq, d/2)
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).flatten(-2).to(x.dtype)


def mha(x, wq, wk, wv, wo, num_heads, rope_fn=None, token_positions=None):
    """Causal multi-head self-attention from F.linear and F.scaled_dot_product_attention
    (is_causal, enable_gqa); rope_fn(t, positions) rotates q and k if given."""
    d_k = wq.shape[0] // num_heads
    q = TF.linear(x, wq).unflatten(-1, (num_heads, d_k)).transpose(-3, -2)
    k = TF.linear(x, wk).unflatten(-1, (wk.shape[0] // d_k, d_k)).transpose(-3, -2)
    v = TF.linear(x, wv).unflatten(-1, (wv.shape[0] // d_k, d_k)).transpose(-3, -2)
    if rope_fn is not None:
        pos = torch.arange(x.shape[-2]) if token_positions is None else token_positions
        q, k = rope_fn(q, pos.unsqueeze(-2)), rope_fn(k, pos.unsqueeze(-2))
    out = TF.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return TF.linear(out.transpose(-3, -2).flatten(-2), wo)


def sdpa_zero_masked_rows(Q, K, V, mask=None):
    """torch's scaled dot-product attention, with this package's definition of a query that may
    attend to nothing (zeros; torch gives NaN there). Leading dimensions are broadcast first
    (grouped-query attention passes k and v with a size-1 group dimension)."""
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])  # torch's imports sympy: 0.4 s
    Q, K, V = (t.expand(*batch, *t.shape[-2:]) for t in (Q, K, V))
    out = TF.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    if mask is None:
        return out
    return out.masked_fill(~mask.any(-1, keepdim=True), 0.0)


def rope_cos_sin_polar(d_k, theta, max_seq_len, device=None):
    """cos and sin as Meta's llama precomputes them: freqs_cis = polar(1, outer(t, freqs))
    (llama/model.py, precompute_freqs_cis), in float64."""
    freqs = 1.0 / (theta ** (torch.arange(0, d_k, 2, dtype=torch.float64, device=device)[: d_k // 2] / d_k))
    t = torch.arange(max_seq_len, dtype=torch.float64, device=device)
    freqs_cis = torch.polar(
        torch.ones(max_seq_len, d_k // 2, dtype=torch.float64, device=device), torch.outer(t, freqs)
    )
    return freqs_cis.real.contiguous(), freqs_cis.imag.contiguous()


def rope_complex_tables(x, cos, sin, token_positions):
    """RoPE as llama's apply_rotary_emb: adjacent pairs as complex numbers times the table's
    e^{i angle} at each position, in float64."""
    d = x.shape[-1]
    rot = torch.complex(cos.double(), sin.double())[token_positions]  # (..., seq, d/2)
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * rot).flatten(-2).to(x.dtype)


class Arg(NamedTuple):
    """An argument tests/test_dtypes.py's inputs() draws after x: `shape` ~ N(mean, std^2)."""

    shape: tuple[int, ...]
    std: float
    mean: float = 0.0


def projection(out: int, fan_in: int) -> Arg:
    """A weight (out, fan_in) ~ N(0, 1/fan_in)."""
    return Arg((out, fan_in), fan_in**-0.5)


def gain(n: int) -> Arg:
    """A gain (n,) ~ N(1, 0.25)."""
    return Arg((n,), 0.5, 1.0)


def bias(n: int) -> Arg:
    """A bias (n,) ~ N(0, 0.25)."""
    return Arg((n,), 0.5)


@dataclass(frozen=True)
class Builtin:
    """A kernel of cs336_basics.nn.functional written with PyTorch's built-ins (`fn`, same signature),
    and how tests/test_dtypes.py runs the two on its rows of tests/floors.py's KERNEL_TABLES."""

    fn: Callable
    # the arguments after x, from x's last dim d (d_ff = 2d)
    args: Callable[[int], tuple[Arg, ...]] = lambda d: ()
    # its rows: row name -> the keywords the row passes both kernels; None: one row, the kernel's name
    rows: dict[str, dict] | None = None
    # half precision computed in float32 and rounded once: within a few ulps of the float64 truth
    upcast: bool = False
    # > 0: the kernel looks up token ids in [0, token_ids) of x's shape without its last dim (drawn
    # first), in a table (token_ids, d) drawn as x, which it takes in x's place
    token_ids: int = 0


def _grouped_query_attention(q, k, v, mask=None):
    """sdpa_zero_masked_rows with k's and v's heads each repeated to q's number."""
    k = k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)
    v = v.repeat_interleave(q.shape[-3] // v.shape[-3], -3)
    return sdpa_zero_masked_rows(q, k, v, mask)


def _cross_entropy(inputs, targets):
    """Half types in float32, returned in their dtype, as the handout asks (F.cross_entropy on
    bfloat16 rounds along the way); int32 targets as int64, which F.cross_entropy requires."""
    logits = inputs.reshape(-1, inputs.shape[-1]).to(torch.promote_types(inputs.dtype, torch.float32))
    return TF.cross_entropy(logits, targets.reshape(-1).long()).to(inputs.dtype)


# cs336_basics.nn.functional's kernels written with PyTorch's built-ins, by their name there
# (builtin_kernels() swaps each in).
BUILTIN_KERNELS = {
    "linear": Builtin(TF.linear, args=lambda d: (projection(d + 1, d),)),
    "embedding": Builtin(lambda token_ids, weight: TF.embedding(token_ids, weight), token_ids=11),
    "silu": Builtin(TF.silu, upcast=True),
    "relu": Builtin(TF.relu),
    "gelu": Builtin(
        lambda x, approximate="none": TF.gelu(x, approximate=approximate),
        rows={"gelu": {}, "gelu_tanh": {"approximate": "tanh"}},
        upcast=True,
    ),
    "softmax": Builtin(lambda x, dim=-1: TF.softmax(x, dim=dim), upcast=True),
    "rmsnorm": Builtin(
        lambda x, weight, eps=1e-5, cast_before_gain=False: TF.rms_norm(x, (x.shape[-1],), weight, eps),
        args=lambda d: (gain(d),),
        upcast=True,
    ),
    "layernorm": Builtin(
        lambda x, weight, bias, eps=1e-5: TF.layer_norm(x, (x.shape[-1],), weight, bias, eps),
        args=lambda d: (gain(d), bias(d)),
        upcast=True,
    ),
    "swiglu_ffn": Builtin(
        swiglu_ffn,
        args=lambda d: (projection(2 * d, d), projection(d, 2 * d), projection(2 * d, d)),
        rows={"swiglu": {}},
    ),
    "positionwise_ffn": Builtin(
        positionwise_ffn, args=lambda d: (projection(2 * d, d), bias(2 * d), projection(d, 2 * d), bias(d))
    ),
    "scaled_dot_product_attention": Builtin(sdpa_zero_masked_rows),
    "grouped_query_attention": Builtin(_grouped_query_attention),
    "rope_cos_sin": Builtin(rope_cos_sin_polar),
    "rope": Builtin(rope_complex_tables),
    "cross_entropy": Builtin(_cross_entropy),
}

# The training components' built-ins, swapped into cs336_basics.optim (the adapters look them up there).
BUILTIN_OPTIM = {
    "AdamW": torch.optim.AdamW,
    "gradient_clipping": lambda parameters, max_l2_norm: torch.nn.utils.clip_grad_norm_(list(parameters), max_l2_norm),
}


def top_p_by_sorting(probs, top_p):
    """Nucleus filtering as Holtzman et al. (2020) define it, over the whole sorted row: keep the
    most likely tokens up to and including the first whose cumulative probability reaches top_p,
    then renormalise."""
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
    before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # mass of the tokens ahead of each
    kept_sorted = torch.where(before < top_p, sorted_probs, torch.zeros_like(sorted_probs))
    kept = torch.zeros_like(probs).scatter(-1, order, kept_sorted)
    return kept / kept.sum(dim=-1, keepdim=True)


def get_batch_python(dataset, batch_size, context_length, device, generator=None):
    """Batches from Python's `random` (a Random seeded from `generator`, if given) and list slices."""
    rng = random if generator is None else random.Random(int(torch.randint(2**62, (1,), generator=generator)))
    starts = [rng.randrange(len(dataset) - context_length) for _ in range(batch_size)]
    rows = [[int(t) for t in dataset[s : s + context_length + 1]] for s in starts]
    return torch.tensor([r[:-1] for r in rows], device=device), torch.tensor([r[1:] for r in rows], device=device)


def save_checkpoint_pickle(model, optimizer, iteration, out):
    """torch.save of the three, written in place (no temporary file)."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}, out)


def load_checkpoint_pickle(src, model, optimizer):
    """torch.load with the full unpickler (weights_only=False: for files of one's own only)."""
    state = torch.load(src, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["iteration"]


# the training utilities, written without this package: (module, attribute) -> replacement
BUILTIN_TRAINING = {
    (data, "get_batch"): get_batch_python,
    (serialization, "save_checkpoint"): save_checkpoint_pickle,
    (serialization, "load_checkpoint"): load_checkpoint_pickle,
}


@contextlib.contextmanager
def builtin_kernels():
    """Inside the block, cs336_basics.nn.functional's kernels and cs336_basics.optim's AdamW and
    gradient clipping are PyTorch's built-ins, and get_batch and the checkpoint functions are
    BUILTIN_TRAINING's."""
    replacements = (
        {(F, name): kernel.fn for name, kernel in BUILTIN_KERNELS.items()}
        | {(optim, name): fn for name, fn in BUILTIN_OPTIM.items()}
        | BUILTIN_TRAINING
    )
    saved = {key: getattr(*key) for key in replacements}
    try:
        for (owner, name), fn in replacements.items():
            setattr(owner, name, fn)
        yield
    finally:
        for (owner, name), fn in saved.items():
            setattr(owner, name, fn)


# ---- byte-level BPE -----------------------------------------------------------------------
# tiktoken's "gpt2" pattern, written out here rather than imported from the package.
GPT2_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def train_bpe_by_recounting(text: str, vocab_size: int, special_tokens: list[str]):
    """The obviously correct trainer: every pair counted again before every merge, in one
    process. Same conventions as cs336_basics.tokenizer.train_bpe (bytes 0-255, the specials,
    then one token per merge; ties to the lexicographically greater pair)."""
    import collections

    import regex

    pieces = [text]
    for special in special_tokens:  # each piece is split on every special token in turn
        pieces = [part for piece in pieces for part in piece.split(special)]
    words = collections.Counter(
        tuple(bytes([b]) for b in token.encode("utf-8"))
        for piece in pieces
        for token in regex.findall(GPT2_SPLIT, piece)
    )
    vocab = {i: bytes([i]) for i in range(256)} | {256 + i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
    merges = []
    while len(vocab) < vocab_size:
        pairs = collections.Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        words = apply_merge(words, best)
    return vocab, merges


def apply_merge(words, pair: tuple[bytes, bytes]):
    """Every pre-token (a Counter of byte tuples) with each occurrence of `pair` joined, left to
    right, non-overlapping."""
    import collections

    merged = collections.Counter()
    for word, n in words.items():
        if pair[0] not in word or pair[1] not in word:  # no occurrence: the word is unchanged
            merged[word] += n
            continue
        out, i = [], 0
        while i < len(word):
            if word[i : i + 2] == pair:
                out.append(pair[0] + pair[1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        merged[tuple(out)] += n
    return merged


def hf_tokenizer(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], special_tokens: list[str] | None = None):
    """Hugging Face `tokenizers` (Rust) loaded with the same vocabulary and merges: GPT-2's
    byte-level pre-tokenizer and decoder; special tokens as added tokens (matched leftmost-longest).
    Where two ids hold the same bytes, the smaller is kept."""
    from cs336_basics.tokenizer.byte_unicode import to_printable_many

    ids = sorted(vocab, reverse=True)  # the smaller id written last: it is kept
    table = dict(zip(to_printable_many([vocab[i] for i in ids]), ids, strict=True))
    parts = to_printable_many([part for pair in merges for part in pair])
    return hf_tokenizer_of_printable(table, list(zip(parts[::2], parts[1::2], strict=True)), special_tokens)


def hf_tokenizer_of_printable(
    vocab: dict[str, int], merges: list[tuple[str, str]], special_tokens: list[str] | None = None
):
    """hf_tokenizer of a vocabulary and merges written as GPT-2's printable strings (its
    byte-to-character table), as vocab.json and merges.txt or a GGUF file's metadata hold them."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    if special_tokens:
        tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in special_tokens])
    return tok
