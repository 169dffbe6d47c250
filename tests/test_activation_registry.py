import pytest
import torch

from cs336_basics.nn import functional as F


def test_activation_registry_names_the_four_activations():
    assert sorted(F.ACTIVATIONS) == ["gelu", "gelu_tanh", "relu", "silu"]


def test_activation_registry_returns_the_named_kernel():
    x = torch.linspace(-3, 3, 7)
    assert torch.equal(F.get_activation("gelu_tanh")(x), F.gelu(x, approximate="tanh"))


def test_activation_registry_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match=r"unknown activation 'swish'; valid names are \['gelu', 'gelu_tanh', 'relu', 'silu'\]"):
        F.get_activation("swish")


def test_relu_keeps_nan_and_zeroes_negatives_like_torch_relu():
    x = torch.tensor([float("nan"), -float("inf"), -2.0, 0.0, 3.0])
    assert torch.equal(F.relu(x).isnan(), torch.relu(x).isnan())
    assert torch.equal(F.relu(x)[1:], torch.relu(x)[1:])
