"""block, rung by rung: the output's shape; a block whose sub-layers write nothing is the identity;
the attention sub-layer alone (x + attn(ln1(x))); the FFN sub-layer alone (x + ffn(ln2(x))); both
in order; causality; the eps, token_positions and attention_mask passed on; the post-norm, no-norm
and ungated-FFN ablations (tests/_ladder.py). Expected values are the formula written here with
F.rms_norm, F.linear and F.scaled_dot_product_attention (tests/oracles.py), in float64."""

import torch
import torch.nn.functional as TF

from . import oracles
from ._helpers import rand
from ._ladder import climb_failed, rung
from .adapters import run_transformer_block, run_transformer_block_ablation

D, HEADS, D_FF, SEQ, THETA, MAX_LEN, EPS = 8, 2, 12, 4, 100.0, 16, 1e-5
# float64 rounding of a ~D_FF-term sum per output: tests/floors.py measures 4.1e-15 ("block.f64")
# for this comparison at d_model 48; 1e-12 of the output's largest entry leaves a wide margin.
REL = 1e-12
WHERE = "TransformerBlock.forward (cs336_basics/nn/modules/transformer_block.py)"


def weights(seed=0, ffn="swiglu") -> dict:
    shapes = {"attn.q_proj.weight": (D, D), "attn.k_proj.weight": (D, D), "attn.v_proj.weight": (D, D),
              "attn.output_proj.weight": (D, D), "ffn.w1.weight": (D_FF, D), "ffn.w2.weight": (D, D_FF)}  # fmt: skip
    if ffn == "swiglu":
        shapes["ffn.w3.weight"] = (D_FF, D)
    w = {k: rand(*s, std=0.4, seed=seed + i) for i, (k, s) in enumerate(shapes.items())}
    w["ln1.weight"] = rand(D, std=0.3, mean=1.0, seed=seed + 50)
    w["ln2.weight"] = rand(D, std=0.3, mean=2.0, seed=seed + 51)  # unlike ln1: a swap shows
    return w


def attn(w, t, positions=None):
    rope = lambda q, p: oracles.rope_complex(q, THETA, p)  # noqa: E731
    return oracles.mha(t, w["attn.q_proj.weight"], w["attn.k_proj.weight"], w["attn.v_proj.weight"],
                       w["attn.output_proj.weight"], HEADS, rope, positions)  # fmt: skip


def ffn(w, t):
    if "ffn.w3.weight" not in w:
        return TF.linear(TF.silu(TF.linear(t, w["ffn.w1.weight"])), w["ffn.w2.weight"])
    return oracles.swiglu_ffn(t, w["ffn.w1.weight"], w["ffn.w2.weight"], w["ffn.w3.weight"])


def norm(w, t, name, eps=EPS):
    return TF.rms_norm(t, (D,), w[name], eps)


def pre_norm(w, x, eps=EPS, positions=None):
    h = x + attn(w, norm(w, x, "ln1.weight", eps), positions)
    return h + ffn(w, norm(w, h, "ln2.weight", eps))


def block(w, x, **kwargs):
    with torch.no_grad():
        return run_transformer_block(D, HEADS, D_FF, MAX_LEN, THETA, w, x, **kwargs)


def off(got, expected) -> float:
    """The largest difference relative to the expected output's largest entry."""
    return float((got - expected).abs().max() / expected.abs().max())


def check(got, expected, observed: str, look_at: str) -> None:
    if got.shape != expected.shape:
        climb_failed(f"{observed}: shape {tuple(got.shape)}, not {tuple(expected.shape)}", look_at)
    if off(got, expected) > REL:
        climb_failed(f"{observed}: off by {off(got, expected):.2g} of its largest entry", look_at)


def matches(got, expected) -> bool:
    return got.shape == expected.shape and off(got, expected) <= REL


def explain(got, want, wanted: str, shown: dict, setting: str, look_at: str) -> None:
    """Fail unless got matches want; say which of the `shown` formulas it equals, if one."""
    if matches(got, want):
        return
    if got.shape != want.shape:
        check(got, want, f"{setting}: {wanted} differs", look_at)
    seen = next((f"the output equals {k}, not {wanted}" for k, v in shown.items() if matches(got, v)), None)
    climb_failed(f"{setting}: {seen or f'{wanted} differs by {off(got, want):.2g} of its largest entry'}", look_at)


@rung(1)
def test_block_output_has_the_input_shape_and_dtype():
    x = rand(2, SEQ, D, seed=7)
    got = block(weights(), x)
    if tuple(got.shape) != tuple(x.shape) or got.dtype != x.dtype:
        climb_failed(
            f"input {tuple(x.shape)} {x.dtype} gave {tuple(got.shape)} {got.dtype}",
            f"{WHERE}: both residual sums keep (batch, seq, d_model) and the weights' dtype",
        )


@rung(2)
def test_block_with_sub_layers_writing_zero_is_the_identity():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    w["attn.output_proj.weight"].zero_()
    w["ffn.w2.weight"].zero_()
    got = block(w, x)
    if matches(got, x):
        return
    seen = (
        "all zeros"
        if float(got.abs().max()) == 0
        else f"an output {off(got, x):.2g} (of the input's largest entry) away from it"
    )
    climb_failed(
        f"with output_proj and ffn.w2 all zeros (attention and FFN output 0) the block returned {seen}, not its input",
        f"{WHERE}: the pre-norm block adds each sub-layer's output to its input (x + ...), "
        "and normalises only the sub-layers' inputs",
    )


@rung(3)
def test_block_first_sub_layer_alone_is_x_plus_attn_of_ln1():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    w["ffn.w2.weight"].zero_()
    got, want = block(w, x), x + attn(w, norm(w, x, "ln1.weight"))
    shown = {"x + attention(ln2(x)) (ln2's weight)": x + attn(w, norm(w, x, "ln2.weight")), "the input x": x}
    explain(got, want, "x + attention(ln1(x))", shown, "with the FFN writing zero (ffn.w2 = 0)",
            f"{WHERE}: h = x + self.attn(self.ln1(x), ...), and the output adds the FFN's to h")  # fmt: skip


@rung(4)
def test_block_ffn_sub_layer_alone_is_x_plus_ffn_of_ln2():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    w["attn.output_proj.weight"].zero_()
    got, want = block(w, x), x + ffn(w, norm(w, x, "ln2.weight"))
    check(got, want, "with attention writing zero (output_proj = 0), x + ffn(ln2(x)) differs",
          f"{WHERE}: out = h + self.ffn(self.ln2(h)) with h = x here")  # fmt: skip


@rung(5)
def test_block_ffn_reads_and_adds_to_the_first_residual_sum():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    h = x + attn(w, norm(w, x, "ln1.weight"))
    got, want = block(w, x), h + ffn(w, norm(w, h, "ln2.weight"))
    shown = {
        "h + ffn(ln2(x))": h + ffn(w, norm(w, x, "ln2.weight")),
        "x + ffn(ln2(h))": x + ffn(w, norm(w, h, "ln2.weight")),
    }
    explain(got, want, "h + ffn(ln2(h))", shown, "with h = x + attention(ln1(x))",
            f"{WHERE}: the FFN sub-layer reads h and adds to h: out = h + self.ffn(self.ln2(h))")  # fmt: skip


@rung(6)
def test_block_is_causal():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    y = x.clone()
    y[:, -1] += 1.0
    a, b = block(w, x), block(w, y)
    if not torch.equal(a[:, :-1], b[:, :-1]):
        changed = int((a[:, :-1] != b[:, :-1]).any(-1).sum())
        climb_failed(
            f"changing only the last token changed the output at {changed} earlier position(s)",
            f"{WHERE}: the attention sub-layer is causal; the FFN and norms act on each position alone",
        )


@rung(7)
def test_block_passes_eps_to_both_norms():
    w, x = weights(), rand(1, SEQ, D, seed=7, std=0.1)
    got, want = block(w, x, eps=0.5), pre_norm(w, x, eps=0.5)
    check(got, want, "eps=0.5 on inputs of RMS about 0.1: the block differs from the formula with eps=0.5",
          "the block's eps argument: pass it to both RMSNorms (ln1 and ln2)")  # fmt: skip


@rung(8)
def test_block_passes_token_positions_to_attn():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    positions = torch.tensor([[0, 3, 5, 9]])
    got, want = block(w, x, token_positions=positions), pre_norm(w, x, positions=positions)
    shown = {"its output at the default positions 0, 1, 2, 3": pre_norm(w, x)}
    explain(got, want, "the formula at those positions", shown, "token_positions [0, 3, 5, 9]",
            f"{WHERE}: pass token_positions on to self.attn (RoPE rotates q and k at those positions)")  # fmt: skip


@rung(9)
def test_block_padding_mask_hides_the_masked_keys():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    mask = torch.tensor([[False, True, True, True]])
    got = block(w, x, attention_mask=mask)[:, 1:]
    want = block(w, x[:, 1:], token_positions=torch.tensor([[1, 2, 3]]))
    if matches(got, want):
        return
    seen = "the unmasked output" if matches(got, block(w, x)[:, 1:]) else "neither that nor the unmasked output"
    climb_failed(
        f"attention_mask hiding key 0: the outputs at positions 1-3 are {seen}, not those of the block run "
        "on tokens 1-3 alone (at positions 1-3)",
        f"{WHERE}: pass attention_mask on to self.attn",
    )


def ablation(w, x, norm_: str, ffn_: str, eps=EPS):
    d_ff = w["ffn.w1.weight"].shape[0]
    with torch.no_grad():
        return run_transformer_block_ablation(D, HEADS, d_ff, MAX_LEN, THETA, w, x, norm_, ffn_, eps)


@rung(10)
def test_block_post_norm_normalises_each_residual_sum():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    h = norm(w, x + attn(w, x), "ln1.weight", 0.1)
    want = norm(w, h + ffn(w, h), "ln2.weight", 0.1)
    check(ablation(w, x, "post", "swiglu", 0.1), want, "norm='post', eps=0.1: ln2(h + ffn(h)), h = ln1(x + attn(x)) differs",
          f"{WHERE}: the post-norm branch, with the block's eps")  # fmt: skip


@rung(11)
def test_block_without_norms_is_two_plain_residual_sums():
    w, x = weights(), rand(1, SEQ, D, seed=7)
    del w["ln1.weight"], w["ln2.weight"]
    h = x + attn(w, x)
    check(ablation(w, x, "none", "swiglu"), h + ffn(w, h), "norm='none': h + ffn(h), h = x + attn(x) differs",
          f"{WHERE}: with norm='none' the sub-layers read their inputs unnormalised")  # fmt: skip


@rung(12)
def test_block_ungated_ffn_is_w2_act_w1():
    w, x = weights(ffn="silu"), rand(1, SEQ, D, seed=7)
    check(ablation(w, x, "pre", "silu"), pre_norm(w, x), "ffn='silu': x + attn(ln1 x), then h + W2 SiLU(W1 ln2(h)) differs",
          "the ungated FFN (ffn='silu'): W2 SiLU(W1 x), no W3")  # fmt: skip
