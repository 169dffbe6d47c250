import pytest
import torch

from cs336_basics.fixture_io import fixture_names
from cs336_basics.nn import FFNBlock, FFNBlockConfig, convert

from ._helpers import F64, assert_close, rand
from .adapters import run_ffn_block
from .floors import MaxErrors, tol
from .oracles import builtin_kernels


@pytest.mark.parametrize("case", fixture_names("ffn_block"))
def test_ffn_block_matches_fixture(case, snapshot):
    fx = snapshot.load(case)
    snapshot.check(run_ffn_block(**fx.kwargs), fx)


BUILTIN_CONFIGS = {
    "llama": FFNBlockConfig(24, 40, norm="rmsnorm", ffn="swiglu", activation="silu"),
    "original": FFNBlockConfig(24, 40, norm="layernorm", ffn="positionwise", activation="gelu", bias=True),
    "positionwise_relu_nobias": FFNBlockConfig(24, 40, norm="layernorm", ffn="positionwise", activation="relu"),
}


def _ours_and_builtin(config: FFNBlockConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The adapter on the reference's kernels and on PyTorch's, with the same weights."""
    torch.manual_seed(0)
    block = FFNBlock(config, dtype=F64)
    with torch.no_grad():
        for p in block.parameters():
            p.add_(0.1 * torch.randn_like(p))  # move norms' gains and biases off their init
    x = rand(2, 3, 24, std=2.0, mean=0.5)
    weights = convert.to_meta({k: v.detach() for k, v in block.state_dict().items()})  # the adapter's names
    ours = run_ffn_block(24, 40, weights, x, config.norm, config.ffn, config.activation, config.eps, config.bias)
    with builtin_kernels():
        expected = run_ffn_block(
            24, 40, weights, x, config.norm, config.ffn, config.activation, config.eps, config.bias
        )
    return ours, expected


@pytest.mark.parametrize("config", BUILTIN_CONFIGS.values(), ids=BUILTIN_CONFIGS)
def test_ffn_block_matches_torch_builtins(config):
    assert_close(*_ours_and_builtin(config), tol("ffn_block.f64"), "ffn block vs built-ins")


def measure_floors(seeds=range(1)) -> dict[str, float]:
    """{floor name: max scaled error} of the comparison with the built-ins above, on its inputs
    (`seeds` do not apply)."""
    return MaxErrors.of("ffn_block.f64", (_ours_and_builtin(config) for config in BUILTIN_CONFIGS.values()))


def test_ffn_block_is_identity_plus_ffn_of_norm():
    block = FFNBlock(FFNBlockConfig(24, 40))
    x = rand(3, 24, dtype=torch.float32)
    assert_close(
        block(x),
        x + block.ffn(block.ln2(x)),
        0.0,
        "block(x) vs x + block.ffn(block.ln2(x))",
    )


def test_ffn_block_state_dict_keys_are_cs336_block_names_and_rename_to_meta_names():
    """ln2 and ffn, as in CS336's TransformerBlock (this block is its second half); the adapter
    takes Meta llama's names (the fixtures' keys), which convert.to_meta gives."""
    keys = list(FFNBlock(FFNBlockConfig(24, 40, norm="layernorm", ffn="positionwise", bias=True)).state_dict())
    assert keys == ["ln2.weight", "ln2.bias", "ffn.w1.weight", "ffn.w1.bias", "ffn.w2.weight", "ffn.w2.bias"]
    meta = ["ffn_norm.weight", "ffn_norm.bias", "feed_forward.w1.weight", "feed_forward.w1.bias",
            "feed_forward.w2.weight", "feed_forward.w2.bias"]  # fmt: skip
    assert list(convert.to_meta(dict.fromkeys(keys, torch.zeros(1)))) == meta
    assert list(convert.from_meta(dict.fromkeys(meta, torch.zeros(1)))) == keys


def test_ffn_block_config_default_d_ff_uses_the_8_thirds_rule():
    assert FFNBlock(FFNBlockConfig(64)).ffn.d_ff == 192


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(norm="batchnorm"), "unknown norm 'batchnorm'"),
        (dict(ffn="moe"), "unknown ffn 'moe'"),
        (dict(activation="swish"), "unknown activation 'swish'"),
        (dict(eps=0.0), "eps must be > 0"),
        (dict(d_ff=0), "d_ff must be > 0"),
    ],
    ids=["norm", "ffn", "activation", "eps", "d_ff"],
)
def test_ffn_block_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FFNBlockConfig(**{"d_model": 24, "d_ff": 40, **kwargs})
