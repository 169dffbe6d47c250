"""Tensor-parallel sharding: split a full state dict into per-rank shards and join them back.
A plan maps each key to the axis it is split along (None: replicated); the parallel layers
declare theirs as `shard_dim` (column-parallel: 0, the output rows; row-parallel: 1, the input
columns), as in Megatron-LM (Shoeybi et al. 2019). Declared apart from the modules, as
torchtitan's parallelize plans are."""

import torch
from torch import Tensor, nn


def sharding_plan(module: nn.Module) -> dict[str, int | None]:
    """{state dict key: split axis or None} of `module`: a submodule with a `shard_dim` splits its
    `weight` along it; every other parameter is replicated."""
    plan = {}
    for prefix, sub in module.named_modules():
        for name, _ in sub.named_parameters(recurse=False):
            key = f"{prefix}.{name}" if prefix else name
            plan[key] = getattr(sub, "shard_dim", None) if name == "weight" else None
    return plan


def _check_world_size(world_size: int) -> None:
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")


def shard_state_dict(
    state_dict: dict[str, Tensor], plan: dict[str, int | None], rank: int, world_size: int
) -> dict[str, Tensor]:
    """Rank `rank`'s shard of a full state dict: each key split into `world_size` equal contiguous
    blocks along plan[key] (rank r keeps block r), or kept whole where plan[key] is None. A key
    missing from the plan, or an axis that does not divide by world_size, is a ValueError."""
    _check_world_size(world_size)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size={world_size}), got {rank}")
    unknown = sorted(state_dict.keys() - plan.keys())
    if unknown:
        raise ValueError(f"shard_state_dict: keys {unknown} are not in the sharding plan {sorted(plan)}")
    out = {}
    for key, value in state_dict.items():
        dim = plan[key]
        if dim is None:
            out[key] = value
            continue
        size = value.shape[dim]
        if size % world_size != 0:
            raise ValueError(
                f"{key}: dimension {dim} of shape {tuple(value.shape)} has size {size}, "
                f"which is not divisible by world_size={world_size}"
            )
        n = size // world_size
        out[key] = value.narrow(dim, rank * n, n).contiguous()
    return out


def gather_state_dict(shards: list[dict[str, Tensor]], plan: dict[str, int | None]) -> dict[str, Tensor]:
    """The inverse of shard_state_dict: shards[r] is rank r's; split keys are concatenated in rank
    order along plan[key], replicated keys are taken from rank 0 (and must agree on every rank)."""
    if not shards:
        raise ValueError("gather_state_dict: got no shards")
    keys = shards[0].keys()
    for r, shard in enumerate(shards):
        if shard.keys() != keys:
            raise ValueError(f"gather_state_dict: rank {r} has keys {sorted(shard)}, rank 0 has {sorted(keys)}")
    out = {}
    for key in keys:
        if key not in plan:
            raise ValueError(f"gather_state_dict: key {key!r} is not in the sharding plan {sorted(plan)}")
        parts = [shard[key] for shard in shards]
        if plan[key] is None:
            if any(not torch.equal(p, parts[0]) for p in parts[1:]):
                raise ValueError(f"gather_state_dict: replicated key {key!r} differs between ranks")
            out[key] = parts[0]
        else:
            out[key] = torch.cat(parts, dim=plan[key])
    return out
