"""The ATen operators a graded component may run: elementary tensor operations, by kind.

The rule below Python: while a component runs, every operator PyTorch's dispatcher executes
(seen by builtin_guard's recorder, however it was reached) must be one of ELEMENTARY, or one
of EXCEPTIONS[component]. An operator is elementary when it is creation, memory or a view,
indexing, a named mathematical function applied elementwise, a comparison, a reduction, a scan,
a sort, a matrix product or a random draw. What computes a layer, a loss or a normalisation
(softmax in any form, log-sum-exp, the norms, attention, activations named after networks:
silu, gelu, glu, softplus, mish, ...), or an optimizer's step, is not on the list, so it is
forbidden without being named. Names are call_name()'s: "aten.exp" for aten::exp, any overload;
an in-place form `x_` is its operator's (add_ is add).
"""

from types import MappingProxyType

CREATION = frozenset(
    "empty empty_like empty_strided empty_permuted new_empty new_empty_strided new_zeros new_ones new_full "
    "zeros zeros_like ones ones_like full full_like arange linspace logspace eye scalar_tensor lift lift_fresh "
    "lift_fresh_copy _to_copy to clone copy contiguous detach alias fill zero set resize _resize_output "
    "_local_scalar_dense item is_nonzero is_same_size equal result_type promote_types _assert_async "
    "_assert_scalar _functional_assert_async resolve_conj resolve_neg conj _conj conj_physical _conj_physical "
    "complex view_as_complex view_as_real polar real imag _has_compatible_shallow_copy_type _copy_from "
    "_copy_from_and_resize tensor_split _unsafe_index sym_size sym_numel sym_stride sym_storage_offset "
    "_nested_tensor_from_mask_left_aligned record_stream _pin_memory is_pinned".split()
)
VIEWS_AND_INDEXING = frozenset(
    "view _unsafe_view reshape _reshape_alias as_strided expand expand_as view_as transpose t permute mT mH "
    "adjoint numpy_T squeeze unsqueeze flatten unflatten narrow narrow_copy slice slice_scatter select "
    "select_scatter split split_with_sizes unsafe_split unsafe_split_with_sizes chunk unsafe_chunk unbind "
    "movedim moveaxis swapaxes swapdims cat concat concatenate stack hstack vstack dstack repeat "
    "repeat_interleave tile flip fliplr flipud roll rot90 tril triu diagonal diag diag_embed diagonal_scatter "
    "index index_select gather scatter scatter_add scatter_reduce index_put _index_put_impl index_add "
    "index_copy index_fill masked_fill masked_select masked_scatter take take_along_dim where nonzero "
    "nonzero_static argwhere broadcast_to broadcast_tensors constant_pad_nd pad unfold one_hot "
    "_unsafe_index_put atleast_1d atleast_2d atleast_3d meshgrid".split()
)
POINTWISE = frozenset(
    "add sub rsub subtract mul multiply div divide true_divide floor_divide remainder fmod neg negative "
    "abs absolute sign sgn signbit pow float_power square sqrt rsqrt exp exp2 expm1 log log2 log10 log1p sin "
    "cos tan asin acos atan atan2 arctan2 sinh cosh tanh asinh acosh atanh sigmoid erf erfc erfinv "
    "reciprocal floor ceil round trunc fix frac clamp clip clamp_min clamp_max maximum minimum fmax fmin lerp addcmul "
    "addcdiv hypot copysign nan_to_num xlogy logit eq ne lt le gt ge equal isnan isinf isfinite isposinf "
    "isneginf isclose logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor "
    "bitwise_not bitwise_left_shift bitwise_right_shift __and__ __or__ __xor__ __lshift__ __rshift__ "
    "__iand__ __ior__ __ixor__ __ilshift__ __irshift__ angle deg2rad rad2deg heaviside".split()
)
REDUCTIONS_SCANS_SORTS = frozenset(
    "sum nansum mean nanmean prod amax amin max min aminmax argmax argmin var std var_mean std_mean norm "
    "linalg_vector_norm frobenius_norm any all count_nonzero cumsum cumprod cummax cummin _cummax_helper "
    "_cummin_helper sort argsort msort topk kthvalue median nanmedian mode unique _unique _unique2 "
    "unique_consecutive unique_dim bincount histc searchsorted bucketize allclose dist".split()
)
MATRIX_PRODUCTS = frozenset(
    "matmul mm bmm addmm addbmm baddbmm addmv mv dot vdot outer ger einsum tensordot inner kron".split()
)
# Draws from torch's generators (the given one, or the default); dropout is a random mask that
# computes no component (an inert nn.Dropout(0.0) is allowed).
RANDOM = frozenset(
    "normal uniform bernoulli multinomial exponential random randint randint_like rand rand_like randn "
    "randn_like randperm geometric cauchy log_normal poisson dropout native_dropout".split()
)
# Multi-tensor forms (torch._foreach_*) of the pointwise and reduction operators above.
FOREACH = frozenset(
    f"_foreach_{op}" for op in (POINTWISE | REDUCTIONS_SCANS_SORTS | CREATION) if not op.startswith("_")
)
ELEMENTARY = frozenset(
    f"aten.{op}"
    for op in CREATION | VIEWS_AND_INDEXING | POINTWISE | REDUCTIONS_SCANS_SORTS | MATRIX_PRODUCTS | RANDOM | FOREACH
)

# component -> operators it may run besides ELEMENTARY: the things the handout gives it
EXCEPTIONS = MappingProxyType({})


# torch.special's names for operators above, and the normal distribution's CDF (erf's, rescaled)
SPECIAL = MappingProxyType({"expit": "sigmoid", "ndtr": "erfc", "ndtri": "erfinv", "log_ndtr": "erfc"})


def base_name(name: str) -> str:
    """The operator an in-place, out, torch.special or derivative form belongs to: aten.add_ ->
    aten.add (not aten.__or__), aten.special_expit -> aten.sigmoid, and autograd's derivative
    kernel aten.sigmoid_backward -> aten.sigmoid (the derivative of an elementary operation is
    elementary; that of a forbidden one is forbidden with it)."""
    name = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    name = name.removesuffix("_backward_data").removesuffix("_backward")
    if name.startswith("aten.special_"):
        op = name.removeprefix("aten.special_")
        name = f"aten.{SPECIAL.get(op, op)}"
    return name


def elementary(name: str, component: str | None = None) -> bool:
    """Whether the ATen operator `name` (call_name's "aten.X") is elementary, or allowed in `component`."""
    op = base_name(name)
    return op in ELEMENTARY or name in ELEMENTARY or op in EXCEPTIONS.get(component, ())


def not_elementary(component: str, calls) -> list[str]:
    """The ATen operators among `calls` that `component` may not run, sorted."""
    return sorted(c for c in calls if c.startswith("aten.") and not elementary(c, component))
