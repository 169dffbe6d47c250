"""Counting the collectives a tensor-parallel module issues: Megatron-LM's FFN issues one
all-reduce in forward (g) and one in backward per column-parallel layer (f), no more
(Shoeybi et al. 2019, section 3)."""

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import torch.distributed as dist

# torch.distributed's collectives -> the collective each performs (a gather into a list or into
# one tensor is the same all-gather: either is a correct way to write Megatron's g)
COLLECTIVES = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "broadcast": "broadcast",
    "all_to_all_single": "all_to_all",
}
KINDS = tuple(sorted(set(COLLECTIVES.values())))  # the order counts are reported in


@contextmanager
def counting_collectives() -> Iterator[Counter]:
    """Count every call of the torch.distributed collectives in COLLECTIVES while inside, by the
    collective it performs (in this process: a rank counts its own)."""
    counts, originals = Counter(), {name: getattr(dist, name) for name in COLLECTIVES}

    def counted(name):
        def call(*args, **kwargs):
            counts[COLLECTIVES[name]] += 1
            return originals[name](*args, **kwargs)

        return call

    for name in COLLECTIVES:
        setattr(dist, name, counted(name))
    try:
        yield counts
    finally:
        for name, fn in originals.items():
            setattr(dist, name, fn)
