import pytest
import torch
import torch.nn.functional as TF

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import Embedding
from cs336_basics.nn import functional as F

from . import _init_stats as S
from . import adapters
from ._helpers import assert_close, rand


@pytest.mark.parametrize("case", fixture_names("embedding"))
def test_embedding_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(getattr(adapters, fx.adapter)(**fx.kwargs), fx)


@pytest.mark.parametrize("batch", [(), (7,), (2, 5), (2, 3, 4)], ids=["0d", "1d", "2d", "3d"])
def test_embedding_kernel_matches_torch_builtin(batch):
    weight = rand(50, 16, std=2.0, mean=-1.0)
    ids = torch.randint(0, 50, batch, generator=torch.Generator().manual_seed(1))
    assert_close(
        F.embedding(ids, weight),
        TF.embedding(ids, weight),
        0.0,
        "F.embedding(ids, weight) vs TF.embedding(ids, weight)",
    )


def test_embedding_module_has_weight_vocab_by_d_model():
    layer = Embedding(50, 16)
    assert [(n, tuple(p.shape)) for n, p in layer.named_parameters()] == [("weight", (50, 16))]


def test_embedding_loads_torch_nn_embedding_state_dict_and_matches_it():
    """The same key and layout as torch.nn.Embedding (weight (vocab_size, d_model)): its state dict loads strictly."""
    torch.manual_seed(0)
    theirs, ours = torch.nn.Embedding(50, 16), Embedding(50, 16)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    ids = torch.tensor([[0, 49, 7]])
    with torch.no_grad():
        assert_close(ours(ids), theirs(ids), 0.0, "Embedding vs torch.nn.Embedding")


# Initialisation (CS336 a1 section 3.4.1): weight ~ N(0, 1) truncated at +-3. Bounds:
# tests/_init_stats.py (5 standard errors: a correct init fails with probability 5.7e-7).
INIT_VOCAB, INIT_D_MODEL = 1000, 128  # 128000 draws


def _init_weight():
    torch.manual_seed(0)
    return S.sample(Embedding(INIT_VOCAB, INIT_D_MODEL).weight)


def test_embedding_init_weights_have_mean_zero():
    w = _init_weight()
    assert abs(w.mean().item()) <= S.mean_bound(S.truncated_std(1.0), w.numel())


def test_embedding_init_weight_std_is_that_of_a_unit_normal_truncated_at_3():
    w = _init_weight()
    ratio = w.std().item() / S.truncated_std(1.0)
    assert abs(ratio - 1) <= S.relative_std_bound(w.numel()), f"std {ratio:.4f} x the truncated normal's"


def test_embedding_init_weights_lie_within_3():
    w = _init_weight()  # untruncated, 0.27% of 128000 draws (about 350) would lie outside
    assert w.abs().max().item() <= S.CUT
