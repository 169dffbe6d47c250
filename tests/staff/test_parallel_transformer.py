"""The language model split over ranks (heads and FFN hidden units; cs336_basics/nn/parallel/
transformer_lm.py) generates what one process generates: the same greedy tokens, token for
token, logits within a measured tolerance of the float64 truth, a KV cache of local heads only,
and no rank left running. A small random model: 2 layers, 4 query heads sharing 2 kv heads.
Tolerance: tests/floors.py ("parallel_transformer.f32"), the floor measured by measure_floors below."""

import pytest
import torch
import torch.distributed as dist

from cs336_basics.generation.generate import generate
from cs336_basics.nn import TransformerLM, TransformerLMConfig
from cs336_basics.nn.parallel import ParallelTransformerLM, choose_backend, load_sharded
from cs336_basics.nn.parallel.launch import launch
from cs336_basics.testing import compare

from .. import _parallel as P
from ..floors import MaxErrors, tol

pytestmark = pytest.mark.slow  # second tier: a language model split over ranks

CONFIG = TransformerLMConfig(vocab_size=61, context_length=40, d_model=32, num_layers=2, num_heads=4, d_ff=48,
                             rope_theta=500.0, num_kv_heads=2)  # fmt: skip
PROMPT, NEW = [5, 17, 3, 42, 8], 24
TOL = tol("parallel_transformer.f32")  # float32 logits of the whole sequence vs the float64 truth


no_process_left_behind = P.no_process_left_behind  # autouse: every test here


def full_state_dict(seed: int = 0) -> dict[str, torch.Tensor]:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return TransformerLM(CONFIG, dtype=torch.float64).state_dict()


def _rank(rank, world_size, state_dict):
    """This rank's greedy tokens, its float32 logits of the whole generated sequence, the shape
    of its first layer's cached keys, and the group's backend."""
    f32 = {k: v.float() for k, v in state_dict.items()}
    model = load_sharded(CONFIG, f32)
    tokens = list(generate(model, PROMPT, NEW))
    cache = model.new_kv_cache()
    with torch.no_grad():
        logits = model(torch.tensor([PROMPT + tokens]), kv_cache=cache)
    return tokens, logits, tuple(cache[0].k.shape), dist.get_backend()


def one_process_run(seed: int = 0) -> tuple:
    """Tokens and float32 logits of our TransformerLM in this process, and the float64 truth."""
    state_dict = full_state_dict(seed)
    model = TransformerLM(CONFIG)
    model.load_state_dict({k: v.float() for k, v in state_dict.items()})
    truth = TransformerLM(CONFIG, dtype=torch.float64)
    truth.load_state_dict(state_dict)
    tokens = list(generate(model, PROMPT, NEW))
    ids = torch.tensor([PROMPT + tokens])
    with torch.no_grad():
        return tokens, model(ids), truth(ids)


def two_ranks_run(seed: int = 0) -> list[tuple]:
    """Each rank's _rank(...) of the model `seed` draws, split over two ranks."""
    return launch(_rank, 2, (full_state_dict(seed),), timeout=60)


def logits_vs_truth(one_process: tuple, two_ranks: list[tuple]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{whose: (float32 logits, the float64 truth)}: the one-process model's and each rank's."""
    _, ours, truth = one_process
    ranks = {f"W=2, rank {r}": (logits, truth) for r, (_, logits, *_) in enumerate(two_ranks)}
    return {"one process": (ours, truth)} | ranks


@pytest.fixture(scope="module")
def one_process():
    return one_process_run()


@pytest.fixture(scope="module")
def two_ranks():
    return two_ranks_run()


def test_parallel_transformer_greedy_tokens_equal_one_process_token_for_token(one_process, two_ranks):
    tokens = one_process[0]
    assert len(tokens) == NEW
    assert [r[0] for r in two_ranks] == [tokens, tokens]  # and every rank picked the same


def test_parallel_transformer_logits_match_the_float64_truth(one_process, two_ranks):
    for what, (logits, truth) in logits_vs_truth(one_process, two_ranks).items():
        result = compare(logits, truth, TOL, out_dtype=torch.float32)
        assert result.ok, f"{what}, float32 logits: {result.message}"


def test_parallel_transformer_kv_cache_holds_only_local_kv_heads(two_ranks):
    d_k = CONFIG.d_model // CONFIG.num_heads
    assert [r[2] for r in two_ranks] == [(1, CONFIG.num_kv_heads // 2, CONFIG.context_length, d_k)] * 2


def test_parallel_transformer_runs_on_the_chosen_backend(two_ranks):
    assert [r[3] for r in two_ranks] == [choose_backend()] * 2  # gloo on CPU, nccl with CUDA, $CS336_DIST_BACKEND


def test_parallel_transformer_state_dict_keys_equal_the_one_process_model_s():
    keys = ParallelTransformerLM(CONFIG, world_size=2, rank=0).state_dict().keys()
    assert keys == TransformerLM(CONFIG).state_dict().keys()


def test_parallel_transformer_rejects_heads_the_ranks_cannot_share():
    config = TransformerLMConfig(61, 40, 36, 1, num_heads=9, d_ff=48, num_kv_heads=3)  # SmolLM2's 9 and 3 heads
    with pytest.raises(ValueError, match=r"num_heads=9 and num_kv_heads=3 are not divisible by world_size=2"):
        ParallelTransformerLM(config, world_size=2, rank=0)


def measure_floors(seeds: range | None = None) -> dict[str, float]:
    """{floor name: max scaled error} of the logits above, the model of each of `seeds` (by default 0-4)."""
    runs = ((one_process_run(seed), two_ranks_run(seed)) for seed in seeds or range(5))
    return MaxErrors.of("parallel_transformer.f32", (pair for run in runs for pair in logits_vs_truth(*run).values()))
