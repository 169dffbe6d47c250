"""get_batch: random windows of a token array, inputs and next-token targets.

The snapshot case runs tests/adapters.py's run_get_batch_checks: 1000 batches from a uint16 token
file opened with np.memmap, each check of GET_BATCH_CHECKS (tests/adapter_checks.py) 1 if it held. The tests below check
the same behaviours one at a time, with a seeded generator. A statistical check fails a correct
get_batch with a probability stated at the check (a union bound over what it tests); the
generator is seeded, so each outcome here is fixed.
"""

import numpy as np
import pytest
import torch

from cs336_basics.data import get_batch
from cs336_basics.fixture_io import fixture_names

from .adapter_checks import (
    GET_BATCH_CHECKS,
    binomial_bounds,
    get_batch_checks,
    reads_little_of_a_memmap,
    resident_fraction,
)
from .adapters import run_get_batch, run_get_batch_checks

TOKENS = np.random.default_rng(0).choice(
    50_000, size=60, replace=False
)  # distinct ids: a row's first token is its start


def batches(n: int, batch_size: int = 8, context_length: int = 5, seed: int = 0, tokens=TOKENS):
    g = torch.Generator().manual_seed(seed)
    return [get_batch(tokens, batch_size, context_length, "cpu", generator=g) for _ in range(n)]


def failed_checks(found: torch.Tensor) -> list[str]:
    return [check for check, ok in zip(GET_BATCH_CHECKS, found.tolist(), strict=False) if not ok]


@pytest.mark.parametrize("case", fixture_names("get_batch"))
def test_get_batch_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_get_batch_checks(**fx.kwargs), fx)


def test_get_batch_shapes_dtype_and_device():
    x, y = run_get_batch(TOKENS, 4, 5, "cpu")
    assert (x.shape, y.shape, x.dtype, y.dtype, x.device, y.device) == (
        (4, 5),
        (4, 5),
        torch.long,
        torch.long,
        torch.device("cpu"),
        torch.device("cpu"),
    )


def test_get_batch_inputs_are_windows_and_targets_are_the_next_tokens():
    found = get_batch_checks(TOKENS, batches(50), 8, 5)  # the first four checks (the counts need more batches)
    assert found[:4].tolist() == [1, 1, 1, 1], failed_checks(found)


def test_get_batch_every_start_is_drawn_uniformly():
    # 2500 batches of 8 rows over 55 starts: each start's count must lie within its Binomial(20000,
    # 1/55) bounds at 1e-6 / 55 per start, so a correct get_batch fails with probability <= 1e-6.
    # (A start never drawn, e.g. the last one, is 364 counts below its mean of 364: outside them.)
    found = get_batch_checks(TOKENS, batches(2500, seed=1), 8, 5)
    assert failed_checks(found) == []


def test_get_batch_check_bounds_are_exact_binomial_tails():
    lo, hi = binomial_bounds(20_000, 1 / 55, 1e-6 / 55)
    mean, sd = 20_000 / 55, (20_000 / 55 * (1 - 1 / 55)) ** 0.5
    assert 5 < (mean - lo) / sd < 6.5 and 5 < (hi - mean) / sd < 6.5  # 5.4 and 5.8 standard deviations (skewed)
    assert binomial_bounds(10, 1.0, 1e-6) == (10, 10)  # one start only: every row starts there


def test_get_batch_seeded_generator_is_reproducible():
    a, b, c = batches(3, seed=7), batches(3, seed=7), batches(3, seed=8)
    assert all(torch.equal(x1, x2) and torch.equal(y1, y2) for (x1, y1), (x2, y2) in zip(a, b, strict=False))
    assert not all(torch.equal(x1, x2) for (x1, _), (x2, _) in zip(a, c, strict=False))


def test_get_batch_global_seed_is_reproducible():
    torch.manual_seed(3)
    a = run_get_batch(TOKENS, 4, 5, "cpu")
    torch.manual_seed(3)
    assert torch.equal(a[0], run_get_batch(TOKENS, 4, 5, "cpu")[0])


def test_get_batch_one_valid_start():
    x, y = get_batch(TOKENS[:6], 3, 5, "cpu")  # 6 tokens, context 5: only start 0
    assert torch.equal(x, torch.from_numpy(TOKENS[:5]).expand(3, 5)) and torch.equal(
        y, torch.from_numpy(TOKENS[1:6]).expand(3, 5)
    )


def test_get_batch_reads_a_uint16_memmap(tmp_path):
    path = tmp_path / "tokens.bin"
    TOKENS.astype(np.uint16).tofile(path)
    found = get_batch_checks(TOKENS, batches(50, tokens=np.memmap(path, dtype=np.uint16, mode="r")), 8, 5)
    assert found[:4].tolist() == [1, 1, 1, 1], failed_checks(found)


def test_get_batch_reads_only_the_sampled_tokens_of_a_memmap(tmp_path):
    # a 12 MB sparse token file: one row's call may bring in a page or two, not half the file
    assert reads_little_of_a_memmap(run_get_batch, str(tmp_path), 5)


def test_get_batch_memmap_residency_is_measurable_here(tmp_path):
    # the check above says True where it cannot measure; show that it measures on this machine
    path = tmp_path / "zeros.bin"
    with open(path, "wb") as f:
        f.truncate(1 << 20)
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    if resident_fraction(tokens) is None:
        pytest.skip("mincore(2) is not available on this system")
    np.array(tokens)  # reads every page
    assert resident_fraction(tokens) == 1.0


def test_get_batch_unavailable_device_raises_clear_error():
    # CS336's test expects a RuntimeError (or AssertionError) for a device that does not exist
    with pytest.raises(RuntimeError, match=r"device='cuda:99' is not available here"):
        run_get_batch(TOKENS, 4, 5, "cuda:99")
