import pytest
import torch

from cs336_basics.nn import functional as F

from ._helpers import assert_close


def test_activation_registry_names_the_four_activations():
    assert sorted(F.ACTIVATIONS) == ["gelu", "gelu_tanh", "relu", "silu"]


def test_activation_registry_returns_the_named_kernel():
    x = torch.linspace(-3, 3, 7)
    assert_close(
        F.get_activation("gelu_tanh")(x),
        F.gelu(x, approximate="tanh"),
        0.0,
        "F.get_activation('gelu_tanh')(x) vs F.gelu(x, approximate='tanh')",
    )


def test_activation_registry_unknown_name_lists_valid_names():
    with pytest.raises(
        ValueError, match=r"unknown activation 'swish'; valid names are \['gelu', 'gelu_tanh', 'relu', 'silu'\]"
    ):
        F.get_activation("swish")


def test_relu_keeps_nan_and_zeroes_negatives_like_torch_relu():
    x = torch.tensor([float("nan"), -float("inf"), -2.0, 0.0, 3.0])
    assert_close(F.relu(x).isnan(), torch.relu(x).isnan(), 0.0, "F.relu(x).isnan() vs torch.relu(x).isnan()")
    assert_close(F.relu(x)[1:], torch.relu(x)[1:], 0.0, "F.relu(x)[1:] vs torch.relu(x)[1:]")
