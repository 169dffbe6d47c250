# hostile sample subclass_alias: appended to the reference's functional.py, replacing its silu
class _Hides(torch.Tensor):
    """A wrapper whose aten.alias answers with the built-in, unseen by the modes above it."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.alias.default:
            with torch._C.DisableTorchFunction():
                return torch.nn.functional.silu(args[0].inner)
        raise NotImplementedError(func)


def silu(x):
    return torch.ops.aten.alias.default(_Hides(x)) * 1
