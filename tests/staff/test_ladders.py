"""The ladders (tests/test_<component>_ladder.py) against the catalogue: every accepted variant
climbs every rung, and every mistake and confuser of a laddered component fails a rung (or is
listed below with the test that catches it), whose message is what a student sees first."""

import pytest

from cs336_basics.nn.parallel.launch import START_METHOD_ENV
from cs336_basics.staff.cases import CONFUSERS, MISTAKES, VARIANTS

from .ladders import LADDERED, first_failed_rung

# Wrong implementations no rung sees, and why: a behaviour the ladder does not measure.
BEYOND_THE_LADDER = {
    "get_batch-reads_whole_file": "memory, not values: test_get_batch_reads_only_the_sampled_tokens_of_a_memmap",
    "layernorm-init_bias_ones": "initialisation, not the forward the ladder loads: test_layernorm_init_bias_is_zero",
    "linear-init_std_from_d_in_only": "initialisation, not the forward the ladder loads: "
    "test_linear_init_weight_std_is_that_of_sqrt_2_over_d_in_plus_d_out_truncated_at_3_std",
    "linear-init_not_truncated": "initialisation, not the forward the ladder loads: "
    "test_linear_init_weights_lie_within_3_std",
    "linear-init_bias_ones": "initialisation, not the forward the ladder loads: test_linear_init_bias_is_zero",
    "embedding-init_not_truncated": "initialisation, not the forward the ladder loads: "
    "test_embedding_init_weights_lie_within_3",
}


@pytest.fixture(autouse=True)
def _ranks_inherit_the_patch(monkeypatch):
    """A patch applied here reaches parallel's ladder ranks only if they are forked from this
    process (the launcher picks a forkserver when this process has other threads)."""
    monkeypatch.setenv(START_METHOD_ENV, "fork")


LADDER_VARIANTS = [v for v in VARIANTS if v.component in LADDERED]
LADDER_WRONG = [w for w in (*MISTAKES, *CONFUSERS) if w.component in LADDERED]


@pytest.mark.parametrize("component", LADDERED)
def test_ladders_the_reference_climbs_every_rung(component):
    assert first_failed_rung(component) is None


@pytest.mark.parametrize("variant", LADDER_VARIANTS, ids=[v.name for v in LADDER_VARIANTS])
def test_ladders_every_accepted_variant_climbs_every_rung(variant):
    with variant.applied():
        assert first_failed_rung(variant.component) is None


@pytest.mark.parametrize("wrong", LADDER_WRONG, ids=[w.name for w in LADDER_WRONG])
def test_ladders_every_known_wrong_implementation_fails_a_rung(wrong):
    with wrong.applied():
        failed = first_failed_rung(wrong.component)
    assert (failed is None) == (wrong.name in BEYOND_THE_LADDER), failed
    if failed is not None:
        assert "observed: " in failed[1] and "look at: " in failed[1]
