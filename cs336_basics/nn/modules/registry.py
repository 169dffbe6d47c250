"""Norms and feed-forward networks by name: one table each, every entry building its module from
the same arguments (torchtitan's `build_norm(norm_type, dim, eps)` and timm's registries build by
name the same way):

    NORMS[name](d_model, eps, bias, device, dtype)                norm:  (..., d_model) -> (..., d_model)
    FFNS[name](d_model, d_ff, activation, bias, device, dtype)    ffn:   (..., d_model) -> (..., d_model)

A module file enters its class in a table with a decorator above the class, `@norm("rmsnorm")` or
`@ffn("swiglu")`; nn/modules/__init__.py imports every module file, so the tables are complete
once anything of the package is imported (this file imports no module file). An entry takes every
argument of its table and passes the class those its __init__ accepts (RMSNorm has no bias,
SwiGLU no biases); an argument the caller leaves out takes the class's own default, except a
norm's bias, which is off unless asked. FFNBlockConfig, TransformerBlock and TransformerLM accept
exactly these names, so a new kind needs no line here."""

import inspect
from collections.abc import Callable

from torch import nn


class _Own:
    """A table's default meaning "the class's own default" (none: the argument is not passed)."""

    def __repr__(self) -> str:
        return "OWN"


_OWN = _Own()


def _norm_arguments(d_model: int, eps: float = _OWN, bias: bool = False, device=_OWN, dtype=_OWN):
    """A norm's arguments: its bias only when asked, as a decoder layer's norms (Llama's have none)."""


def _ffn_arguments(d_model: int, d_ff: int | None, activation: str = _OWN, bias: bool = _OWN, device=_OWN, dtype=_OWN):
    """An FFN's arguments (d_ff=None: SwiGLU's 8/3 rule)."""


class _Entry:
    """The constructor of `cls` in a table of arguments `arguments` (a signature): called with the
    table's arguments, it builds cls from those its __init__ accepts; one the caller leaves out
    takes the table's default, or the class's own where the table's is _OWN."""

    def __init__(self, cls: type[nn.Module], arguments: inspect.Signature):
        self.cls, self.arguments = cls, arguments
        accepted = inspect.signature(cls).parameters
        self.passed = [name for name in arguments.parameters if name in accepted]
        required = [
            name
            for name, p in accepted.items()
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        missing = [name for name in required if name not in self.passed]
        if missing:
            raise TypeError(f"{cls.__name__} requires {missing}, which a table of {list(arguments.parameters)} lacks")

    def __call__(self, *args, **kwargs) -> nn.Module:
        given = self.arguments.bind(*args, **kwargs)
        given.apply_defaults()
        return self.cls(**{name: given.arguments[name] for name in self.passed if given.arguments[name] is not _OWN})

    def __repr__(self) -> str:
        return f"entry({self.cls.__module__}.{self.cls.__qualname__})"


class _Table(dict[str, _Entry]):
    """Name -> entry (_Entry), for modules taking the arguments of `arguments` (a function's
    signature); the names in alphabetical order."""

    def __init__(self, kind: str, arguments: Callable):
        super().__init__()
        self.kind, self.arguments = kind, inspect.signature(arguments)

    def register(self, name: str) -> Callable[[type[nn.Module]], type[nn.Module]]:
        """A class decorator entering the class under `name`; the class is returned unchanged. A
        name another class holds is refused (the same class again, as on a reload, replaces it)."""

        def enter(cls: type[nn.Module]) -> type[nn.Module]:
            held = self.get(name)
            if held is not None and (held.cls.__module__, held.cls.__qualname__) != (cls.__module__, cls.__qualname__):
                raise ValueError(f"{self.kind} {name!r} is {held.cls.__qualname__} already, not {cls.__qualname__}")
            entries = {**self, name: _Entry(cls, self.arguments)}
            self.clear()
            self.update(sorted(entries.items()))  # in alphabetical order, whatever the import order
            return cls

        return enter


NORMS = _Table("norm", _norm_arguments)
FFNS = _Table("ffn", _ffn_arguments)
norm = NORMS.register
ffn = FFNS.register
