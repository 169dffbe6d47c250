from cs336_basics.nn import convert, functional, modules
from cs336_basics.nn.ffn_width import ffn_hidden_dim
from cs336_basics.nn.modules import *  # noqa: F403 (the modules, listed once: modules/__init__.py)

__all__ = [*modules.__all__, "convert", "ffn_hidden_dim", "functional"]
