"""Generation with the language model split over a group (nn.parallel): every rank holds its
shard, runs the same `cs336_basics.generation.generate.generate` loop (with a KV cache of its local kv heads) and, since
each layer's all-reduces leave the same residual stream on every rank, computes the same logits
and picks the same tokens. Rank 0 reports them as they come."""

import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from cs336_basics.generation.generate import generate
from cs336_basics.nn.modules.transformer_lm import TransformerLMConfig
from cs336_basics.nn.parallel.transformer_lm import load_sharded


def rank_generate(
    rank: int,
    world_size: int,
    config: TransformerLMConfig,
    state_dict: dict[str, torch.Tensor],
    prompt_ids: list[int],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    eos_token_ids: tuple[int, ...] = (),
    seed: int = 0,
    on_token: Callable[[int], None] | None = None,
) -> tuple[list[int], float]:
    """(new token ids, seconds spent generating them) on this rank of an initialised group;
    `on_token` is called with each new id on rank 0 only. The model runs in the dtype of
    state_dict's tensors, on this rank's GPU under nccl and on the CPU otherwise."""
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    dtype = next(iter(state_dict.values())).dtype
    model = load_sharded(config, state_dict, device=device, dtype=dtype).eval()
    generator = torch.Generator().manual_seed(seed)  # the same stream on every rank: same samples
    tokens, start = [], time.perf_counter()
    for token in generate(model, prompt_ids, max_new_tokens, temperature, top_p, eos_token_ids, generator):
        tokens.append(token)
        if rank == 0 and on_token is not None:
            on_token(token)
    return tokens, time.perf_counter() - start
