"""Argument checks shared by the kernels and modules.

Each raises ValueError or TypeError whose message names the argument, what was
expected and what was given, so a mistake surfaces at the call site rather than
as a bare traceback from deep inside torch. The checks of one kernel are one
function named after it (`linear(x, weight, bias)` checks `functional.linear`'s
arguments), built from the named checks above them. A kernel whose jaxtyping
annotations state everything its arguments need (tensor kinds and shapes) is checked by
`annotations(kernel, *args)` instead, which reads them.

A caller that has checked its own arguments once may run the kernels it calls inside
`checked_once()`: their checks then pass without looking (a model's forward checks its inputs,
and every layer gets tensors the model built from them).
"""

import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import jaxtyping
import torch

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INDEX_DTYPES = (torch.int64, torch.int32)  # uint8 and bool tensors would index as masks


def check_float(name: str, tensor: torch.Tensor) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have a floating dtype {FLOAT_DTYPES}, got {tensor.dtype}")


def check_shape(name: str, tensor: torch.Tensor, expected: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(tensor.shape)}")


def check_last_dim(name: str, tensor: torch.Tensor, expected: int, what: str) -> None:
    if tensor.dim() == 0 or tensor.shape[-1] != expected:
        raise ValueError(f"{name} must have last dimension {what}={expected}, got shape {tuple(tensor.shape)}")


def check_same_dtype(name: str, tensor: torch.Tensor, other_name: str, other: torch.Tensor) -> None:
    if tensor.dtype != other.dtype:
        raise TypeError(
            f"{name} has dtype {tensor.dtype} but {other_name} has dtype {other.dtype}; cast one so they match"
        )


def check_positive(name: str, value: int | float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def check_dim(name: str, tensor: torch.Tensor, dim: int) -> None:
    if not -tensor.dim() <= dim < max(tensor.dim(), 1):
        raise ValueError(
            f"dim must be in [{-tensor.dim()}, {tensor.dim() - 1}] for {name} of shape {tuple(tensor.shape)}, got {dim}"
        )


def check_index_tensor(name: str, tensor: torch.Tensor) -> None:
    if not isinstance(tensor, torch.Tensor) or tensor.dtype not in INDEX_DTYPES:
        got = tensor.dtype if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        raise TypeError(f"{name} must be an integer tensor of dtype torch.int64 or torch.int32, got {got}")


def check_index_range(name: str, tensor: torch.Tensor, bound_name: str, bound: int) -> None:
    """Every entry of `tensor` lies in [0, bound)."""
    if tensor.numel() > 0:
        lo, hi = int(tensor.min()), int(tensor.max())
        if lo < 0 or hi >= bound:
            raise ValueError(f"{name} must lie in [0, {bound_name}={bound}), got values in [{lo}, {hi}]")


def check_matrix(name: str, tensor: torch.Tensor, layout: str = "") -> None:
    """`tensor` is 2-D; `layout` (e.g. "(d_out, d_in)") names its dimensions in the message."""
    if tensor.dim() != 2:
        layout = f" {layout}" if layout else ""
        raise ValueError(f"{name} must be 2-D{layout}, got shape {tuple(tensor.shape)}")


def check_floats_like(x: torch.Tensor, **tensors: torch.Tensor | None) -> None:
    """Each given tensor is floating and has x's dtype; None (an absent bias) is skipped."""
    for name, t in tensors.items():
        if t is not None:
            check_float(name, t)
            check_same_dtype("x", x, name, t)


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape that `shapes` broadcast to (NumPy's rules: align on the right, each size equal or
    1), or None if they do not broadcast. Plain Python: torch.broadcast_shapes imports sympy on
    its first call, 0.4 s."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(1, ndim + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


# --- Checking once per call -------------------------------------------------------------------

_checked: ContextVar[bool] = ContextVar("cs336_checked_once", default=False)
_every: ContextVar[bool] = ContextVar("cs336_every_check", default=False)


@contextmanager
def checked_once() -> Iterator[None]:
    """Inside, every kernel check below returns at once: the caller has checked its arguments."""
    token = _checked.set(not _every.get())
    try:
        yield
    finally:
        _checked.reset(token)


@contextmanager
def every_check() -> Iterator[None]:
    """Inside, checked_once() skips nothing: every kernel checks its arguments, as the kernels of
    a model put together from separate parts (a student's, or one with a kernel swapped) do."""
    token = _every.set(True)
    try:
        yield
    finally:
        _every.reset(token)


def kernel_check(check: Callable[..., None]) -> Callable[..., None]:
    """`check`, skipped inside `checked_once()`."""

    @functools.wraps(check)
    def guarded(*args) -> None:
        if not _checked.get():
            check(*args)

    return guarded


# --- What a kernel's annotations state ------------------------------------------------------


@functools.cache
def _annotated_arguments(fn: Callable) -> tuple[tuple[int, str, str, tuple[str, ...], object], ...]:
    """(position, argument, kind, dims, default) for each argument of fn annotated Float[Tensor, ...],
    Int[...] or Bool[...] (jaxtyping), in signature order: kind "float32", "int64" or "bool", dims
    the annotation's words, default None where the annotation allows None (else a missing marker)."""
    hints = typing.get_type_hints(fn)
    found = []
    for position, (name, parameter) in enumerate(inspect.signature(fn).parameters.items()):
        hint = hints.get(name)
        options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        arrays = [h for h in options if isinstance(h, type) and issubclass(h, jaxtyping.AbstractArray)]
        if arrays:
            kind = next(k for k in ("float32", "int64", "bool") if k in arrays[0].dtypes)
            default = parameter.default if type(None) in options else inspect.Parameter.empty
            found.append((position, name, kind, tuple(arrays[0].dim_str.split()), default))
    return tuple(found)


def _shown(word: str, sizes: dict[str, tuple[int, str]]) -> str:
    """An annotation word in a message: a named dimension with the size it has so far."""
    dim = word.lstrip("#")
    return f"{dim}={sizes[dim][0]}" if dim in sizes else word


def _check_dims(name: str, tensor: torch.Tensor, dims: tuple[str, ...], sizes: dict[str, tuple[int, str]]) -> None:
    """tensor's shape against annotation words ("...", "*batch", "d_model", "#b", "1"), right-aligned
    after a leading variadic word; each named size is the one the first argument naming it had."""
    fixed = [d for d in dims if d != "..." and not d.startswith("*")]
    variadic = len(fixed) < len(dims)
    shape = tuple(tensor.shape)
    expected = ", ".join(_shown(d, sizes) for d in dims) + ("," if len(dims) == 1 else "")
    if len(shape) < len(fixed) or (not variadic and len(shape) != len(fixed)):
        raise ValueError(f"{name} must have shape ({expected}), got {shape}")
    for word, size in zip(fixed, shape[len(shape) - len(fixed) :], strict=True):
        dim = word.lstrip("#")
        if dim.isdigit() and size != int(dim):
            raise ValueError(f"{name} must have shape ({expected}), got {shape}")
        if not dim.isdigit():
            first, source = sizes.setdefault(dim, (size, name))
            if size != first and not (word.startswith("#") and size == 1):
                raise ValueError(f"{name} must have {dim}={first} as {source} has, got shape {shape}")


@kernel_check
def annotations(fn: Callable, *args) -> None:
    """fn's arguments (given by position) against what its jaxtyping annotations state: each
    annotated argument a tensor of its kind (Float: a floating dtype, Int: an index dtype), None
    only where annotated `| None`, of the annotated rank and sizes, a named dimension one size in
    every argument. The whole check of a kernel whose annotations state everything it needs; what
    they cannot state (eps > 0, a dim in range) is a function below named after the kernel."""
    sizes: dict[str, tuple[int, str]] = {}
    for position, name, kind, dims, default in _annotated_arguments(fn):
        value = args[position] if position < len(args) else default
        if value is None and default is None:
            continue
        if kind == "float32":
            check_float(name, value)
        elif kind == "int64":
            check_index_tensor(name, value)
        elif not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
            raise TypeError(f"{name} must be a torch.bool tensor, got {getattr(value, 'dtype', type(value).__name__)}")
        _check_dims(name, value, dims, sizes)


# --- One check per kernel of cs336_basics.nn.functional, in the order of that file -----------


@kernel_check
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    check_float("x", x)
    check_float("weight", weight)
    check_matrix("weight", weight, "(d_out, d_in)")
    check_last_dim("x", x, weight.shape[1], "d_in")
    check_same_dtype("x", x, "weight", weight)
    if bias is not None:
        check_floats_like(x, bias=bias)
        check_shape("bias", bias, (weight.shape[0],))


@kernel_check
def embedding(token_ids: torch.Tensor, weight: torch.Tensor) -> None:
    check_index_tensor("token_ids", token_ids)
    check_float("weight", weight)
    check_matrix("weight", weight, "(vocab_size, d_model)")
    check_index_range("token_ids", token_ids, "vocab_size", weight.shape[0])


@kernel_check
def gelu(x: torch.Tensor, approximate: str) -> None:
    check_float("x", x)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


@kernel_check
def swiglu_ffn(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, w3: torch.Tensor) -> None:
    check_float("x", x)
    check_floats_like(x, w1=w1, w2=w2, w3=w3)
    check_matrix("w1", w1, "(d_ff, d_model)")
    d_ff, d_model = w1.shape
    check_last_dim("x", x, d_model, "d_model")
    check_shape("w3", w3, (d_ff, d_model))
    check_shape("w2", w2, (d_model, d_ff))


@kernel_check
def positionwise_ffn(
    x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor | None, w2: torch.Tensor, b2: torch.Tensor | None
) -> None:
    check_float("x", x)
    check_float("w1", w1)
    check_float("w2", w2)
    check_matrix("w1", w1, "(d_ff, d_model)")
    d_ff, d_model = w1.shape
    check_last_dim("x", x, d_model, "d_model")
    check_shape("w2", w2, (d_model, d_ff))
    check_floats_like(x, w1=w1, w2=w2)
    for name, b, shape in (("b1", b1, (d_ff,)), ("b2", b2, (d_model,))):
        if b is not None:
            check_floats_like(x, **{name: b})
            check_shape(name, b, shape)


@kernel_check
def norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float) -> None:
    """RMSNorm's and LayerNorm's arguments: gain (and bias) of shape (d_model,), eps > 0."""
    check_float("x", x)
    check_float("weight", weight)
    d_model = x.shape[-1] if x.dim() > 0 else -1
    check_shape("weight", weight, (d_model,))
    if bias is not None:
        check_float("bias", bias)
        check_shape("bias", bias, (d_model,))
    check_positive("eps", eps)


@kernel_check
def softmax(x: torch.Tensor, dim: int) -> None:
    check_float("x", x)
    check_dim("x", x, dim)


def bool_mask(mask: torch.Tensor, scores_shape: tuple[int, ...]) -> None:
    """mask is a bool tensor that broadcasts to the scores' shape (..., queries, keys)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a torch.bool tensor (True = may attend), got {got}")
    if broadcast_shape(mask.shape, scores_shape) != tuple(scores_shape):
        raise ValueError(
            f"mask must broadcast to (..., queries, keys) = {tuple(scores_shape)}, got shape {tuple(mask.shape)}"
        )


@kernel_check
def attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None) -> None:
    """Scaled dot-product attention's arguments: (..., seq, d) tensors of one dtype, matching d_k and
    keys, leading dimensions that broadcast, and a mask that broadcasts to the scores."""
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        check_float(name, t)
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., seq, d), got shape {tuple(t.shape)}")
    check_same_dtype("Q", Q, "K", K)
    check_same_dtype("Q", Q, "V", V)
    check_last_dim("K", K, Q.shape[-1], "d_k (Q's last dimension)")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same number of keys, got K {tuple(K.shape)} and V {tuple(V.shape)}")
    batch = broadcast_shape(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    if batch is None:
        raise ValueError(
            f"the leading dimensions of Q {tuple(Q.shape)}, K {tuple(K.shape)} and V {tuple(V.shape)} must broadcast"
        )
    if mask is not None:
        bool_mask(mask, (*batch, Q.shape[-2], K.shape[-2]))


@kernel_check
def causal_mask(num_queries: int, num_keys: int) -> None:
    if not 0 < num_queries <= num_keys:
        raise ValueError(f"need 0 < num_queries <= num_keys, got num_queries={num_queries}, num_keys={num_keys}")


@kernel_check
def rope_cos_sin(d_k: int, theta: float, max_seq_len: int) -> None:
    check_positive("d_k", d_k)
    if d_k % 2:
        raise ValueError(f"d_k must be even (RoPE rotates pairs of dimensions), got {d_k}")
    check_positive("theta", theta)
    check_positive("max_seq_len", max_seq_len)


@kernel_check
def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, token_positions: torch.Tensor) -> None:
    """RoPE's arguments: cos and sin (max_seq_len, d_k / 2), x (..., seq, d_k), and integer
    positions in [0, max_seq_len) that broadcast to x's (..., seq)."""
    check_float("x", x)
    check_float("cos", cos)
    check_float("sin", sin)
    if cos.dim() != 2 or cos.shape != sin.shape:
        raise ValueError(
            f"cos and sin must both be (max_seq_len, d_k / 2), got {tuple(cos.shape)} and {tuple(sin.shape)}"
        )
    max_seq_len, half = cos.shape
    check_last_dim("x", x, 2 * half, "d_k")
    check_index_tensor("token_positions", token_positions)
    ok = broadcast_shape(token_positions.shape, x.shape[:-1]) is not None
    if not (ok and token_positions.dim() > 0 and token_positions.shape[-1] == x.shape[-2]):
        raise ValueError(
            f"token_positions must broadcast to x's (..., seq) = {tuple(x.shape[:-1])} with its last dimension "
            f"seq={x.shape[-2]}, got shape {tuple(token_positions.shape)}"
        )
    check_index_range("token_positions", token_positions, "max_seq_len", max_seq_len)


@kernel_check
def grouped_query_attention(q: torch.Tensor, k: torch.Tensor) -> None:
    """q (..., num_heads, queries, d_k) and k (..., num_kv_heads, keys, d_k), num_kv_heads dividing
    num_heads; the rest is scaled dot-product attention's check."""
    if q.dim() < 3 or k.dim() < 3:
        raise ValueError(f"q and k must be (..., heads, seq, d), got shapes {tuple(q.shape)} and {tuple(k.shape)}")
    num_heads, num_kv_heads = q.shape[-3], k.shape[-3]
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} (k's heads) must divide num_heads={num_heads} (q's heads)")


@kernel_check
def multihead_self_attention(
    x: torch.Tensor,
    q_proj_weight: torch.Tensor,
    k_proj_weight: torch.Tensor,
    v_proj_weight: torch.Tensor,
    o_proj_weight: torch.Tensor,
    num_heads: int,
    kv_cache,
    attention_mask: torch.Tensor | None,
) -> None:
    """Self-attention's arguments: the four projections, num_heads dividing d_q, key/value rows
    num_kv_heads * d_k, x (..., seq, d_model), and a padding mask over the cached and new keys."""
    check_positive("num_heads", num_heads)
    weights = {"q_proj_weight": q_proj_weight, "k_proj_weight": k_proj_weight,
               "v_proj_weight": v_proj_weight, "o_proj_weight": o_proj_weight}  # fmt: skip
    for name, w in weights.items():
        check_floats_like(x, **{name: w})
        check_matrix(name, w)
    d_model, d_q, d_kv = x.shape[-1], q_proj_weight.shape[0], k_proj_weight.shape[0]
    if d_q % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide q_proj_weight's rows d_q={d_q}")
    d_k = d_q // num_heads
    check_shape("q_proj_weight", q_proj_weight, (d_q, d_model))
    if d_kv % d_k or num_heads % (d_kv // d_k or 1) or d_kv == 0:
        raise ValueError(
            f"k_proj_weight's rows must be num_kv_heads * d_k with d_k={d_k} and num_kv_heads dividing "
            f"num_heads={num_heads}, got shape {tuple(k_proj_weight.shape)}"
        )
    check_shape("k_proj_weight", k_proj_weight, (d_kv, d_model))
    check_shape("v_proj_weight", v_proj_weight, (d_kv, d_model))
    check_shape("o_proj_weight", o_proj_weight, (d_model, d_q))
    if x.dim() < 2:
        raise ValueError(f"x must be (..., seq, d_model), got shape {tuple(x.shape)}")
    if attention_mask is not None:
        keys = x.shape[-2] + (kv_cache.length if kv_cache is not None else 0)
        padding_mask(attention_mask, (*x.shape[:-2], keys))


def model_inputs(
    in_indices: torch.Tensor,
    token_positions: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    past: int,
    context_length: int,
) -> None:
    """A language model's inputs, checked once for all its layers: positions that broadcast to
    in_indices (..., seq) and lie in [0, context_length) (without them, past + seq tokens must
    fit), and a padding mask (..., past + seq) of bools. The ids are the embedding's check."""
    seq = in_indices.shape[-1]
    if token_positions is None and past + seq > context_length:
        raise ValueError(f"in_indices has {seq} tokens after {past} cached ones; context_length={context_length}")
    if token_positions is not None:
        check_index_tensor("token_positions", token_positions)
        if broadcast_shape(token_positions.shape, in_indices.shape) is None or token_positions.shape[-1:] != (seq,):
            raise ValueError(
                f"token_positions must broadcast to in_indices' (..., seq) = {tuple(in_indices.shape)} with its "
                f"last dimension seq={seq}, got shape {tuple(token_positions.shape)}"
            )
        check_index_range("token_positions", token_positions, "context_length", context_length)
    if attention_mask is not None:
        padding_mask(attention_mask, (*in_indices.shape[:-1], past + seq))


def padding_mask(attention_mask: torch.Tensor, expected: tuple[int, ...]) -> None:
    """attention_mask is a bool tensor of shape (..., cached + seq) = expected."""
    if attention_mask.dtype != torch.bool or tuple(attention_mask.shape) != expected:
        raise ValueError(
            f"attention_mask must be a torch.bool tensor of shape (..., cached + seq) = "
            f"{expected}, got {attention_mask.dtype} {tuple(attention_mask.shape)}"
        )


@kernel_check
def cross_entropy(inputs: torch.Tensor, targets: torch.Tensor) -> None:
    check_float("inputs", inputs)
    if inputs.dim() == 0:
        raise ValueError("inputs must have a last dimension vocab_size, got a 0-d tensor")
    check_index_tensor("targets", targets)
    if tuple(targets.shape) != tuple(inputs.shape[:-1]):
        raise ValueError(
            f"targets must have inputs' leading shape {tuple(inputs.shape[:-1])} (inputs is (..., vocab_size) = "
            f"{tuple(inputs.shape)}), got shape {tuple(targets.shape)}"
        )
    check_index_range("targets", targets, "vocab_size", inputs.shape[-1])
