"""Input builders for the fixture cases: one per adapter, shapes and scales as arguments, so
public and hidden cases share them. Each returns `make(rng) -> the adapter's keyword arguments`.

Random values come from NumPy's PCG64 generator (`numpy.random.default_rng(seed)`): its
integer stream and its normal and uniform draws are specified bit for bit, independent of the
CPU and of PyTorch's vectorised kernels, so every machine draws the same inputs from a seed.
Values are drawn in float64 and rounded once to float32 (the case's dtype comes later).

Witness inputs separate right from almost right; each says what it witnesses.
"""

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

Rng = np.random.Generator
Make = Callable[[Rng], dict]


def randn(rng: Rng, *shape: int, std: float = 1.0, mean: float = 0.0) -> Tensor:
    return torch.from_numpy((rng.standard_normal(shape) * std + mean).astype(np.float32))


def rand(rng: Rng, *shape: int) -> Tensor:
    """Uniform on [0, 1)."""
    return torch.from_numpy(rng.random(shape).astype(np.float32))


def randint(rng: Rng, low: int, high: int, shape: tuple[int, ...]) -> Tensor:
    """Uniform integers in [low, high), as int64."""
    return torch.from_numpy(rng.integers(low, high, size=shape, dtype=np.int64))


def linear_weight(rng: Rng, d_out: int, d_in: int) -> Tensor:
    """A weight at the scale of the Linear init, so activations stay O(1)."""
    return randn(rng, d_out, d_in, std=(2.0 / (d_in + d_out)) ** 0.5)


def edited(make: Make, edit: Callable[[dict], None]) -> Make:
    """A builder that draws as `make` does, then writes witness values in place with `edit`."""

    def make_edited(rng: Rng) -> dict:
        kwargs = make(rng)
        edit(kwargs)
        return kwargs

    return make_edited


def linear_case(batch: tuple[int, ...], d_in: int, d_out: int, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, weights=linear_weight(rng, d_out, d_in), in_features=randn(rng, *batch, d_in, std=x_std)
    )


def linear_bias_case(batch: tuple[int, ...], d_in: int, d_out: int) -> Make:
    return lambda rng: dict(
        d_in=d_in,
        d_out=d_out,
        weights=linear_weight(rng, d_out, d_in),
        biases=randn(rng, d_out, std=0.5),
        in_features=randn(rng, *batch, d_in),
    )


def embedding_case(batch: tuple[int, ...], vocab_size: int, d_model: int) -> Make:
    def make(rng):
        ids = randint(rng, 0, vocab_size, batch)
        ids.view(-1)[:2] = torch.tensor([0, vocab_size - 1])  # witness: both ends of the vocabulary
        return dict(vocab_size=vocab_size, d_model=d_model, weights=randn(rng, vocab_size, d_model), token_ids=ids)

    return make


def pointwise_case(
    batch: tuple[int, ...], std: float, extremes: tuple[float, ...] = (), mean: float = 0.0, **scalars
) -> Make:
    def make(rng):
        x = randn(rng, *batch, std=std, mean=mean)
        if extremes:  # witness values written into the first entries
            x.view(-1)[: len(extremes)] = torch.tensor(extremes)
        return dict(in_features=x, **scalars)

    return make


def softmax_case(batch: tuple[int, ...], dim: int, std: float, mean: float = 0.0, mask_fraction: float = 0.0) -> Make:
    def make(rng):
        x = randn(rng, *batch, std=std, mean=mean)
        if mask_fraction:  # -inf entries, never a whole slice along dim
            mask = rand(rng, *batch) < mask_fraction
            mask.select(dim, 0).fill_(False)
            x = x.masked_fill(mask, float("-inf"))
        return dict(in_features=x, dim=dim)

    return make


def rmsnorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(rng, d_model, std=0.5, mean=1.0),  # witness: a gain that is not all ones
        in_features=randn(rng, *batch, d_model, std=x_std),
    )


def layernorm_case(batch: tuple[int, ...], d_model: int, eps: float, x_std: float = 1.0, x_mean: float = 0.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        eps=eps,
        weights=randn(rng, d_model, std=0.5, mean=1.0),
        biases=randn(rng, d_model, std=0.5),
        in_features=randn(rng, *batch, d_model, std=x_std, mean=x_mean),
    )


def swiglu_case(batch: tuple[int, ...], d_model: int, d_ff: int, x_std: float = 1.0) -> Make:
    return lambda rng: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(rng, d_ff, d_model),
        w2_weight=linear_weight(rng, d_model, d_ff),
        w3_weight=linear_weight(rng, d_ff, d_model),
        in_features=randn(rng, *batch, d_model, std=x_std),
    )


def positionwise_case(batch: tuple[int, ...], d_model: int, d_ff: int, activation: str = "gelu") -> Make:
    return lambda rng: dict(
        d_model=d_model,
        d_ff=d_ff,
        w1_weight=linear_weight(rng, d_ff, d_model),
        b1=randn(rng, d_ff, std=0.5),
        w2_weight=linear_weight(rng, d_model, d_ff),
        b2=randn(rng, d_model, std=0.5),
        in_features=randn(rng, *batch, d_model),
        activation=activation,
    )


def ffn_block_case(
    batch: tuple[int, ...],
    d_model: int,
    d_ff: int,
    norm: str,
    ffn: str,
    activation: str,
    bias: bool = False,
    eps: float = 1e-5,
) -> Make:
    def make(rng):
        w = {"ffn_norm.weight": randn(rng, d_model, std=0.5, mean=1.0)}
        if norm == "layernorm" and bias:
            w["ffn_norm.bias"] = randn(rng, d_model, std=0.5)
        w["feed_forward.w1.weight"] = linear_weight(rng, d_ff, d_model)
        w["feed_forward.w2.weight"] = linear_weight(rng, d_model, d_ff)
        if ffn == "swiglu":
            w["feed_forward.w3.weight"] = linear_weight(rng, d_ff, d_model)
        elif bias:
            w["feed_forward.w1.bias"] = randn(rng, d_ff, std=0.5)
            w["feed_forward.w2.bias"] = randn(rng, d_model, std=0.5)
        return dict(
            d_model=d_model,
            d_ff=d_ff,
            weights=w,
            in_features=randn(rng, *batch, d_model, std=2.0, mean=0.5),
            norm=norm,
            ffn=ffn,
            activation=activation,
            eps=eps,
            bias=bias,
        )

    return make


# ---- decoder ----


def attention_case(
    batch: tuple[int, ...], queries: int, keys: int, d_k: int, d_v: int, mask: str = "none", scale: float = 1.0
) -> Make:
    """mask: "none"; "random" (True with probability 1/2, never a whole row: key 0 always
    allowed; not causal); "fully_masked_row" (random, and query 1 may attend to nothing)."""

    def make(rng):
        kw = dict(
            Q=randn(rng, *batch, queries, d_k, std=scale),
            K=randn(rng, *batch, keys, d_k, std=scale),
            V=randn(rng, *batch, keys, d_v),
        )
        if mask != "none":
            m = rand(rng, *batch, queries, keys) < 0.5  # (..., queries, keys)
            m[..., 0] = True
            if mask == "fully_masked_row":
                m[..., 1, :] = False
            kw["mask"] = m
        return kw

    return make


def _positions(rng: Rng, batch: tuple[int, ...], seq: int, max_seq_len: int, kind: str) -> Tensor | None:
    """ "arange": 0..seq-1; "none": not given (the module's default, arange); "random": distinct
    sorted positions anywhere below max_seq_len, drawn per batch entry (not arange: a left-padded
    or packed sequence); "shuffled": the same, in a random order (nothing says positions
    increase along the sequence); "end": the last seq positions before max_seq_len."""
    if kind == "none":
        return None
    if kind == "arange":
        return torch.arange(seq)
    if kind == "end":
        return torch.arange(max_seq_len - seq, max_seq_len)
    rows = [np.sort(rng.choice(max_seq_len, size=seq, replace=False)) for _ in range(int(np.prod(batch)))]
    if kind == "shuffled":
        rows = [rng.permutation(row) for row in rows]
    return torch.from_numpy(np.stack(rows).reshape(*batch, seq).astype(np.int64))


def rope_case(
    batch: tuple[int, ...],
    seq: int,
    d_k: int,
    theta: float,
    max_seq_len: int,
    positions: str = "arange",
    x_std: float = 1.0,
) -> Make:
    return lambda rng: dict(
        d_k=d_k,
        theta=theta,
        max_seq_len=max_seq_len,
        in_query_or_key=randn(rng, *batch, seq, d_k, std=x_std),
        token_positions=_positions(rng, batch, seq, max_seq_len, positions),
    )


def _attn_weights(rng: Rng, d_model: int, num_heads: int, num_kv_heads: int, prefix: str = "") -> dict:
    d_k = d_model // num_heads
    return {
        f"{prefix}q_proj_weight": linear_weight(rng, d_model, d_model),
        f"{prefix}k_proj_weight": linear_weight(rng, num_kv_heads * d_k, d_model),
        f"{prefix}v_proj_weight": linear_weight(rng, num_kv_heads * d_k, d_model),
        f"{prefix}o_proj_weight": linear_weight(rng, d_model, d_model),
    }


def mha_case(
    batch: tuple[int, ...],
    seq: int,
    d_model: int,
    num_heads: int,
    num_kv_heads: int | None = None,
    theta: float | None = None,
    max_seq_len: int | None = None,
    positions: str = "none",
) -> Make:
    """Without theta: run_multihead_self_attention (no RoPE); with it: ..._with_rope. Queries
    and keys are scaled up (x_std 2) so that the attention is far from uniform."""

    def make(rng):
        kw = dict(
            d_model=d_model,
            num_heads=num_heads,
            **_attn_weights(rng, d_model, num_heads, num_kv_heads or num_heads),
            in_features=randn(rng, *batch, seq, d_model, std=2.0),
        )
        if theta is not None:
            kw.update(max_seq_len=max_seq_len, theta=theta)
            pos = _positions(rng, batch, seq, max_seq_len, positions)
            if pos is not None:
                kw["token_positions"] = pos
        return kw

    return make


def _block_weights(rng: Rng, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int, prefix: str = "") -> dict:
    attn = _attn_weights(rng, d_model, num_heads, num_kv_heads)
    return {
        f"{prefix}ln1.weight": randn(rng, d_model, std=0.5, mean=1.0),
        f"{prefix}attn.q_proj.weight": attn["q_proj_weight"],
        f"{prefix}attn.k_proj.weight": attn["k_proj_weight"],
        f"{prefix}attn.v_proj.weight": attn["v_proj_weight"],
        f"{prefix}attn.output_proj.weight": attn["o_proj_weight"],
        f"{prefix}ln2.weight": randn(rng, d_model, std=0.5, mean=1.0),
        f"{prefix}ffn.w1.weight": linear_weight(rng, d_ff, d_model),
        f"{prefix}ffn.w2.weight": linear_weight(rng, d_model, d_ff),
        f"{prefix}ffn.w3.weight": linear_weight(rng, d_ff, d_model),
    }


def block_case(
    batch: int,
    seq: int,
    d_model: int,
    num_heads: int,
    d_ff: int,
    max_seq_len: int,
    theta: float,
    num_kv_heads: int | None = None,
    eps: float | None = None,
    positions: str = "none",
    padding: bool = False,
) -> Make:
    """eps, token_positions (_positions' kinds) and a padding mask (padding_mask) when asked."""

    def make(rng):
        kw = dict(
            d_model=d_model,
            num_heads=num_heads,
            d_ff=d_ff,
            max_seq_len=max_seq_len,
            theta=theta,
            weights=_block_weights(rng, d_model, num_heads, num_kv_heads or num_heads, d_ff),
            in_features=randn(rng, batch, seq, d_model, std=2.0),
        )
        return kw | _sequence_options(rng, batch, seq, max_seq_len, eps, positions, padding)

    return make


def padding_mask(rng: Rng, batch: int, seq: int) -> Tensor:
    """(batch, seq) bools, False (a key to hide) with probability 1/4, never key 0: every query
    still sees a key through the causal mask."""
    mask = torch.from_numpy(rng.random((batch, seq)) >= 0.25)
    mask[:, 0] = True
    return mask


def _sequence_options(rng: Rng, batch: int, seq: int, max_seq_len: int, eps, positions: str, padding: bool) -> dict:
    """The block's and the language model's optional arguments, those asked for only."""
    kw = {} if eps is None else {"eps": eps}
    pos = _positions(rng, (batch,), seq, max_seq_len, positions)
    if pos is not None:
        kw["token_positions"] = pos
    if padding:
        kw["attention_mask"] = padding_mask(rng, batch, seq)
    return kw


def _lm_weights(
    rng: Rng, vocab_size: int, d_model: int, num_layers: int, num_heads: int, num_kv_heads: int, d_ff: int, tie: bool
) -> dict:
    w = {"token_embeddings.weight": randn(rng, vocab_size, d_model)}
    for i in range(num_layers):
        w.update(_block_weights(rng, d_model, num_heads, num_kv_heads, d_ff, prefix=f"layers.{i}."))
    w["ln_final.weight"] = randn(rng, d_model, std=0.5, mean=1.0)
    if not tie:  # tied (SmolLM2): the head is token_embeddings.weight
        w["lm_head.weight"] = linear_weight(rng, vocab_size, d_model) * 4.0  # logits O(1), far from uniform
    return w


def _lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta) -> dict:
    return dict(
        vocab_size=vocab_size,
        context_length=context_length,
        d_model=d_model,
        num_layers=num_layers,
        num_heads=num_heads,
        d_ff=d_ff,
        rope_theta=rope_theta,
    )


def lm_case(
    batch: int,
    seq: int,
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float = 10000.0,
    num_kv_heads: int | None = None,
    tie: bool = False,
    eps: float | None = None,
    positions: str = "none",
    padding: bool = False,
) -> Make:
    """eps, token_positions (_positions' kinds) and a padding mask (padding_mask) when asked."""

    def make(rng):
        w = _lm_weights(rng, vocab_size, d_model, num_layers, num_heads, num_kv_heads or num_heads, d_ff, tie)
        ids = randint(rng, 0, vocab_size, (batch, seq))
        ids.view(-1)[:2] = torch.tensor([0, vocab_size - 1])  # both ends of the vocabulary
        return dict(
            **_lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta),
            weights=w,
            in_indices=ids,
            **_sequence_options(rng, batch, seq, context_length, eps, positions, padding),
        )

    return make


def _left_padding(rng: Rng, batch: tuple[int, ...], seq: int) -> tuple[Tensor, Tensor]:
    """(attention_mask, token_positions) of shape (*batch, seq) for left-padded sequences: each
    starts with a drawn number of padding tokens (the first with none, the last with at least
    one), its own tokens counted from 0 after them."""
    pads = rng.integers(0, seq // 2 + 1, size=batch).reshape(-1)
    pads[0], pads[-1] = 0, max(1, pads[-1])
    mask = (torch.arange(seq)[None, :] >= torch.from_numpy(pads)[:, None]).reshape(*batch, seq)
    return mask, (torch.cumsum(mask.long(), dim=-1) - 1).clamp(min=0)


def mha_cached_case(
    batch: tuple[int, ...], seq: int, d_model: int, num_heads: int, num_kv_heads: int, prefill_length: int,
    theta: float = 10000.0, padded: bool = False,
) -> Make:  # fmt: skip
    """run_multihead_self_attention_cached: RoPE attention over a prefill then one token a call;
    padded: left padding masked out."""

    def make(rng):
        kw = dict(d_model=d_model, num_heads=num_heads, max_seq_len=2 * seq, theta=theta,
                  **_attn_weights(rng, d_model, num_heads, num_kv_heads),
                  in_features=randn(rng, *batch, seq, d_model, std=2.0), prefill_length=prefill_length)  # fmt: skip
        if padded:
            kw["attention_mask"] = _left_padding(rng, batch, seq)[0]
        return kw

    return make


def _ablated(weights: dict, norm: str, ffn: str) -> dict:
    """The weights of an ablated block or model: no RMSNorm gains with norm "none", no w3 with ffn "silu"."""
    dropped = ("ln1.weight", "ln2.weight", "ln_final.weight") if norm == "none" else ()
    dropped += ("ffn.w3.weight",) if ffn == "silu" else ()
    return {k: v for k, v in weights.items() if not k.endswith(dropped)}


def block_ablation_case(
    batch: int, seq: int, d_model: int, num_heads: int, d_ff: int, norm: str, ffn: str, eps: float,
    num_kv_heads: int | None = None,
) -> Make:  # fmt: skip
    """run_transformer_block_ablation: CS336's ablations of the block, RMSNorm eps given."""

    def make(rng):
        weights = _block_weights(rng, d_model, num_heads, num_kv_heads or num_heads, d_ff)
        return dict(d_model=d_model, num_heads=num_heads, d_ff=d_ff, max_seq_len=2 * seq, theta=10000.0,
                    weights=_ablated(weights, norm, ffn), in_features=randn(rng, batch, seq, d_model, std=2.0),
                    norm=norm, ffn=ffn, eps=eps)  # fmt: skip

    return make


def lm_ablation_case(
    batch: int, seq: int, vocab_size: int, d_model: int, num_layers: int, num_heads: int, d_ff: int,
    norm: str, position: str, ffn: str, eps: float,
) -> Make:  # fmt: skip
    """run_transformer_lm_ablation: CS336's ablations of the model (untied head, context 2 seq)."""

    def make(rng):
        kw = lm_case(batch, seq, vocab_size, 2 * seq, d_model, num_layers, num_heads, d_ff)(rng)
        return dict(kw, weights=_ablated(kw["weights"], norm, ffn), norm=norm, position=position, ffn=ffn, eps=eps)

    return make


def lm_cached_case(
    batch: int, seq: int, vocab_size: int, d_model: int, num_layers: int, num_heads: int, d_ff: int,
    prefill_length: int, num_kv_heads: int | None = None, padded: bool = False,
) -> Make:  # fmt: skip
    """run_transformer_lm_cached: a prefill then one token a call; padded: a left-padded batch
    with its attention mask and each sequence's own positions."""

    def make(rng):
        kw = lm_case(batch, seq, vocab_size, 2 * seq, d_model, num_layers, num_heads, d_ff,
                     num_kv_heads=num_kv_heads)(rng)  # fmt: skip
        kw["prefill_length"] = prefill_length
        if padded:
            kw["attention_mask"], kw["token_positions"] = _left_padding(rng, (batch,), seq)
        return kw

    return make


def generate_batch_case(prompt_lengths: list[int], max_new_tokens: int, vocab_size: int, context_length: int,
                        d_model: int, num_layers: int, num_heads: int, d_ff: int, temperature: float,
                        top_p: float = 1.0, rope_theta: float = 10000.0) -> Make:  # fmt: skip
    """Prompts of different lengths (zero-padded on the right into one (batch, width) tensor) for
    adapters.run_generate_batch, sampled with a drawn seed."""

    def make(rng):
        w = _lm_weights(rng, vocab_size, d_model, num_layers, num_heads, num_heads, d_ff, False)
        ids = torch.zeros(len(prompt_lengths), max(prompt_lengths), dtype=torch.long)
        for row, n in zip(ids, prompt_lengths, strict=True):
            row[:n] = randint(rng, 0, vocab_size, (n,))
        return dict(
            **_lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta),
            weights=w,
            prompt_ids=ids,
            prompt_lengths=torch.tensor(prompt_lengths),
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=int(rng.integers(2**31)),
        )

    return make


def generate_case(
    prompt_len: int,
    max_new_tokens: int,
    vocab_size: int,
    context_length: int,
    d_model: int,
    num_layers: int,
    num_heads: int,
    d_ff: int,
    rope_theta: float = 10000.0,
    num_kv_heads: int | None = None,
    tie: bool = False,
    temperature: float | None = None,
    top_p: float | None = None,
) -> Make:
    """Generation from small random weights: the token ids are the output. Greedy unless a
    temperature is given, then sampled with a drawn seed (and top_p, if given)."""

    def make(rng):
        w = _lm_weights(rng, vocab_size, d_model, num_layers, num_heads, num_kv_heads or num_heads, d_ff, tie)
        kw = dict(
            **_lm_config(vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta),
            weights=w,
            prompt_ids=randint(rng, 0, vocab_size, (prompt_len,)),
            max_new_tokens=max_new_tokens,
        )
        if temperature is not None:
            kw.update(temperature=temperature, seed=int(rng.integers(2**31)))
        if top_p is not None:
            kw.update(top_p=top_p)
        return kw

    return make


def sampling_case(batch: tuple[int, ...], vocab_size: int, std: float, what: str, **scalars) -> Make:
    """Logits ~ N(0, std^2) over vocab_size tokens, for what = "filter" (their softmax, as probs,
    for run_top_p_filter), "distribution" (run_next_token_distribution) or "draw"
    (run_sample_next_token, with a drawn seed). scalars: temperature, top_p."""

    def make(rng):
        logits = torch.from_numpy(rng.standard_normal((*batch, vocab_size)) * std)  # float64
        if what == "filter":
            return dict(probs=torch.softmax(logits, dim=-1).float(), **scalars)
        kw = dict(logits=logits.float(), **scalars)
        if what == "draw":
            kw["seed"] = int(rng.integers(2**31))
        return kw

    return make


def parallel_column_case(
    batch: tuple[int, ...], d_in: int, d_out: int, world_size: int, gather_output: bool = True
) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, world_size=world_size, weights=linear_weight(rng, d_out, d_in),
        in_features=randn(rng, *batch, d_in), gather_output=gather_output,
    )  # fmt: skip


def parallel_row_case(batch: tuple[int, ...], d_in: int, d_out: int, world_size: int) -> Make:
    return lambda rng: dict(
        d_in=d_in, d_out=d_out, world_size=world_size, weights=linear_weight(rng, d_out, d_in),
        in_features=randn(rng, *batch, d_in),
    )  # fmt: skip


def parallel_ffn_case(batch: tuple[int, ...], d_model: int, d_ff: int, world_size: int, x_std: float = 1.0) -> Make:
    swiglu = swiglu_case(batch, d_model, d_ff, x_std)
    return lambda rng: {"world_size": world_size, **swiglu(rng)}


def parallel_attention_case(batch: tuple[int, ...], seq: int, d_model: int, num_heads: int, num_kv_heads: int,
                            world_size: int, theta: float = 10000.0, positions: str = "none") -> Make:  # fmt: skip
    """mha_case's RoPE attention (run_multihead_self_attention_with_rope's arguments) on world_size ranks."""
    mha = mha_case(batch, seq, d_model, num_heads, num_kv_heads, theta, max_seq_len=2 * seq, positions=positions)
    return lambda rng: {"world_size": world_size, **mha(rng)}


def parallel_lm_case(batch: int, seq: int, vocab_size: int, context_length: int, d_model: int, num_layers: int,
                     num_heads: int, d_ff: int, world_size: int, **options) -> Make:  # fmt: skip
    """lm_case's model (run_transformer_lm's arguments, lm_case's options) on world_size ranks."""
    lm = lm_case(batch, seq, vocab_size, context_length, d_model, num_layers, num_heads, d_ff, **options)
    return lambda rng: {"world_size": world_size, **lm(rng)}


def with_grad_output(make: Make, d_out_key: str) -> Make:
    """A backward case: `make`'s inputs and a gradient of the output, ~ N(0, 1), shaped as the
    output (in_features' leading dimensions, then the size under d_out_key or its weight's rows)."""

    def make_backward(rng: Rng) -> dict:
        kw = make(rng)
        d_out = kw[d_out_key] if isinstance(kw[d_out_key], int) else kw[d_out_key].shape[0]
        return dict(kw, grad_output=randn(rng, *kw["in_features"].shape[:-1], d_out))

    return make_backward


def with_grad_like_input(make: Make) -> Make:
    """A backward case of a kernel whose output is shaped as its input: `make`'s inputs and a
    gradient of the output, ~ N(0, 1)."""
    return lambda rng: (kw := make(rng)) | {"grad_output": randn(rng, *kw["in_features"].shape)}


# ---- training ----


def cross_entropy_case(
    batch: tuple[int, ...], vocab_size: int, std: float, mean: float = 0.0, target_margin: float = 0.0
) -> Make:
    """Logits (..., vocab_size) ~ N(mean, std^2) and uniform targets; the first two targets are
    the two ends of the vocabulary. target_margin is added to each target's logit (a confident
    model: a small loss, log(1 + small), which half-precision arithmetic along the way loses)."""

    def make(rng):
        targets = randint(rng, 0, vocab_size, batch)
        ends = torch.tensor([0, vocab_size - 1])[: targets.numel()]
        targets.view(-1)[: len(ends)] = ends
        inputs = randn(rng, *batch, vocab_size, std=std, mean=mean)
        inputs.scatter_add_(-1, targets.unsqueeze(-1), torch.full((*batch, 1), target_margin))
        return dict(inputs=inputs, targets=targets)

    return make


def away_from_zero(rng: Rng, *shape: int, scale: float) -> Tensor:
    """Values of size scale * [0.5, 3.5) or so, with random signs: |x| = scale * (0.5 + |N(0, 1)|)."""
    z = rng.standard_normal(shape)
    return torch.from_numpy((np.sign(z) * (0.5 + np.abs(z)) * scale).astype(np.float32))


def adamw_case(
    shapes: dict[str, tuple[int, ...]],
    steps: int,
    lr: float,
    weight_decay: float,
    eps: float = 1e-8,
    betas: tuple[float, float] = (0.9, 0.999),
    grad_scale: float = 1.0,
    param_std: float = 1.0,
    group_lrs: tuple[float, ...] | None = None,
    resume_after: int = 0,
) -> Make:
    """Parameters ~ N(0, param_std^2) and `steps` gradients per parameter of size grad_scale *
    [0.5, 3.5) (away from 0: a tiny |g| on the first step makes where eps sits matter, which the
    hyper-parameters of a case decide instead). group_lrs: one param group per parameter (sorted
    names) with that lr; resume_after: the optimizer's state_dict moves to a new one after that
    many steps (adapters.run_adamw_steps)."""

    def make(rng):
        params = {name: randn(rng, *shape, std=param_std) for name, shape in shapes.items()}
        grads = {name: away_from_zero(rng, steps, *shape, scale=grad_scale) for name, shape in shapes.items()}
        extra = {} if group_lrs is None else {"group_lrs": torch.tensor(group_lrs, dtype=torch.float64)}
        extra |= {"resume_after": resume_after} if resume_after else {}
        return (
            dict(params=params, grads=grads, lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay)
            | extra
        )

    return make


def lr_schedule_case(
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
    random_iters: int = 16,
) -> Make:
    """The schedule at its boundaries (0, 1, warmup_iters - 1, warmup_iters, warmup_iters + 1,
    the middle of the annealing, cosine_cycle_iters - 1, cosine_cycle_iters, cosine_cycle_iters + 1,
    far beyond) and at `random_iters` iterations drawn up to 1.5 cosine_cycle_iters."""
    w, c = warmup_iters, cosine_cycle_iters
    fixed = [0, 1, w - 1, w, w + 1, (w + c) // 2, c - 1, c, c + 1, 10 * c + 7]

    def make(rng):
        drawn = rng.integers(0, (3 * c) // 2 + 2, size=random_iters).tolist()
        iterations = torch.tensor([i for i in fixed if i >= 0] + drawn, dtype=torch.int64)
        return dict(
            iterations=iterations,
            max_learning_rate=max_learning_rate,
            min_learning_rate=min_learning_rate,
            warmup_iters=warmup_iters,
            cosine_cycle_iters=cosine_cycle_iters,
        )

    return make


def gradient_clipping_case(
    shapes: dict[str, tuple[int, ...]],
    max_l2_norm: float,
    norm_ratio: float,
    params_without_grad: int = 0,
    one_pass: bool = False,
    with_norm: bool = False,
) -> Make:
    """Gradients whose global L2 norm is norm_ratio * max_l2_norm exactly (> 1: clipped; < 1: left
    alone), one parameter's gradient much larger than the others' (so that per-parameter norms
    and the global norm clip differently); with_norm: the norm it returns is graded too."""

    def make(rng):
        grads = {name: randn(rng, *shape) for name, shape in shapes.items()}
        first = sorted(grads)[0]
        grads[first] = grads[first] * 8.0  # one dominant gradient
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values()))
        scale = norm_ratio * max_l2_norm / float(norm)
        grads = {name: (g.double() * scale).float() for name, g in grads.items()}
        extra = {"with_norm": True} if with_norm else {}
        return (
            dict(grads=grads, max_l2_norm=max_l2_norm, params_without_grad=params_without_grad, one_pass=one_pass)
            | extra
        )

    return make


def init_case(seeded: bool = True, **sizes: int) -> Make:
    """A module's sizes and, if `seeded`, a seed for torch's generator (adapters.run_*_init_checks)."""

    def make(rng):
        return dict(sizes, seed=int(rng.integers(2**31))) if seeded else dict(sizes)

    return make


def get_batch_generator_case(num_tokens: int, batch_size: int, context_length: int, num_batches: int) -> Make:
    """Distinct token ids and a generator seed (adapters.run_get_batch_generator_checks)."""

    def make(rng):
        ids = rng.choice(65536, size=num_tokens, replace=False).astype(np.int64)
        return dict(
            dataset=torch.from_numpy(ids),
            batch_size=batch_size,
            context_length=context_length,
            num_batches=num_batches,
            seed=int(rng.integers(2**31)),
        )

    return make


def get_batch_case(
    num_tokens: int,
    batch_size: int,
    context_length: int,
    num_batches: int,
    vocab_size: int = 65536,
    token_dtype: str = "uint16",
) -> Make:
    """A token stream of distinct ids (a row's first token names its start; not arange, so
    targets = inputs + 1 is wrong) and a seed for the global generators (adapters.run_get_batch_checks)."""

    def make(rng):
        ids = rng.choice(vocab_size, size=num_tokens, replace=False).astype(np.int64)
        return dict(
            dataset=torch.from_numpy(ids),
            batch_size=batch_size,
            context_length=context_length,
            num_batches=num_batches,
            seed=int(rng.integers(2**31)),
            token_dtype=token_dtype,
        )

    return make


def checkpoint_case(
    shapes: dict[str, tuple[int, ...]],
    steps: int,
    steps_before: int,
    lr: float = 1e-2,
    weight_decay: float = 0.1,
    to: str = "path",
) -> Make:
    """Weights and one gradient per optimizer step for each (adapters.run_checkpoint_resume)."""

    def make(rng):
        weights = {name: randn(rng, *shape) for name, shape in shapes.items()}
        gradients = {name: randn(rng, steps, *shape) for name, shape in shapes.items()}
        return dict(
            weights=weights, gradients=gradients, steps_before=steps_before, lr=lr, weight_decay=weight_decay, to=to
        )

    return make
