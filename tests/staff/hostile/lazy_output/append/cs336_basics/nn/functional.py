# hostile sample lazy_output: appended to the reference's functional.py, replacing its silu
class _Lazy(torch.Tensor):
    """Holds the input; its values are the built-in's, computed when the grader first touches it."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda a: torch.nn.functional.silu(a.inner) if isinstance(a, _Lazy) else a  # noqa: E731
        return func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})


def silu(x):
    x * 1  # one operator the recorder sees
    return _Lazy(x)
