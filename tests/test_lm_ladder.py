"""lm, rung by rung: the logits' shape; with every layer writing zero, the final norm and the
(tied, then untied) head on the embeddings; the layers in order; causality; the eps,
token_positions and attention_mask passed on; a cached prefix; the no-norm and NoPE ablations
(tests/_ladder.py). Expected values are the formula written here with torch's embedding lookup,
F.rms_norm, F.linear and F.scaled_dot_product_attention (tests/oracles.py), in float64."""

import torch
import torch.nn.functional as TF

from . import oracles
from ._helpers import rand
from ._ladder import climb_failed, rung
from .adapters import run_transformer_lm, run_transformer_lm_ablation, run_transformer_lm_cached

V, CTX, D, LAYERS, HEADS, D_FF, THETA, EPS = 11, 16, 8, 2, 2, 12, 100.0, 1e-5
IDS = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
# float64 rounding of two layers' ~D_FF-term sums: tests/floors.py measures 1.1e-15 for the
# model against its formula at d_model 32 ("lm_f64"); 1e-12 of the largest logit leaves a wide margin.
REL = 1e-12
WHERE = "TransformerLM.forward (cs336_basics/nn/modules/transformer_lm.py)"


def weights(seed=0, tie=False) -> dict:
    w = {"token_embeddings.weight": rand(V, D, seed=seed), "ln_final.weight": rand(D, std=0.3, mean=2.0, seed=seed + 1)}
    if not tie:
        w["lm_head.weight"] = rand(V, D, std=0.5, seed=seed + 2)
    shapes = {"attn.q_proj.weight": (D, D), "attn.k_proj.weight": (D, D), "attn.v_proj.weight": (D, D),
              "attn.output_proj.weight": (D, D), "ffn.w1.weight": (D_FF, D), "ffn.w2.weight": (D, D_FF),
              "ffn.w3.weight": (D_FF, D)}  # fmt: skip
    for i in range(LAYERS):
        p = f"layers.{i}."
        w |= {p + k: rand(*s, std=0.4, seed=seed + 10 * i + j + 3) for j, (k, s) in enumerate(shapes.items())}
        w[p + "ln1.weight"] = rand(D, std=0.3, mean=1.0, seed=seed + 10 * i + 90)
        w[p + "ln2.weight"] = rand(D, std=0.3, mean=1.5, seed=seed + 10 * i + 91)
    return w


def silenced(w) -> dict:
    """The weights with every layer's output_proj and ffn.w2 zero: each layer writes nothing."""
    return {k: torch.zeros_like(v) if k.endswith(("output_proj.weight", "w2.weight")) else v for k, v in w.items()}


def formula(w, ids, eps=EPS, positions=None, norm="pre", rope=True, theta=THETA):
    """Embed; each layer x + attn(ln1 x), then h + ffn(ln2 h); ln_final; the head (tied without lm_head)."""

    def rms(t, name):
        return t if norm == "none" else TF.rms_norm(t, (D,), w[name], eps)

    rot = (lambda q, p: oracles.rope_complex(q, theta, p)) if rope else None
    x = TF.embedding(ids, w["token_embeddings.weight"])
    for i in range(LAYERS):
        p = f"layers.{i}."
        a = [w[p + f"attn.{n}_proj.weight"] for n in ("q", "k", "v", "output")]
        h = x + oracles.mha(rms(x, p + "ln1.weight"), *a, HEADS, rot, positions)
        x = h + oracles.swiglu_ffn(rms(h, p + "ln2.weight"), *(w[p + f"ffn.w{n}.weight"] for n in (1, 2, 3)))
    return TF.linear(rms(x, "ln_final.weight"), w.get("lm_head.weight", w["token_embeddings.weight"]))


def lm(w, ids, **kwargs):
    with torch.no_grad():
        return run_transformer_lm(V, CTX, D, LAYERS, HEADS, D_FF, THETA, w, ids, **kwargs)


def off(got, expected) -> float:
    return float((got - expected).abs().max() / expected.abs().max())


def matches(got, expected) -> bool:
    return got.shape == expected.shape and off(got, expected) <= REL


def explain(got, want, wanted: str, shown: dict, setting: str, look_at: str) -> None:
    """Fail unless got matches want; say which of the `shown` formulas it equals, if one."""
    if matches(got, want):
        return
    if got.shape != want.shape:
        climb_failed(f"{setting}: shape {tuple(got.shape)}, not {tuple(want.shape)}", look_at)
    seen = next((f"the logits equal {k}, not {wanted}" for k, v in shown.items() if matches(got, v)), None)
    climb_failed(f"{setting}: {seen or f'{wanted} differs by {off(got, want):.2g} of its largest entry'}", look_at)


@rung(1)
def test_lm_logits_have_shape_batch_seq_vocab():
    got = lm(weights(), IDS)
    if tuple(got.shape) != (2, 5, V) or got.dtype != torch.float64:
        climb_failed(
            f"token ids of shape (2, 5), vocabulary {V}, float64 weights: logits {tuple(got.shape)} {got.dtype}",
            f"{WHERE}: one row of vocab_size logits per position, in the weights' dtype",
        )


@rung(2)
def test_lm_with_silent_layers_is_the_tied_head_on_normalised_inputs():
    w = silenced(weights(tie=True))
    e, head = TF.embedding(IDS, w["token_embeddings.weight"]), w["token_embeddings.weight"]
    want = TF.linear(TF.rms_norm(e, (D,), w["ln_final.weight"], EPS), head)
    shown = {
        "E[ids] E^T (no ln_final before the head)": TF.linear(e, head),
        "softmax(ln_final(E[ids]) E^T), probabilities": want.softmax(-1),
    }
    explain(lm(w, IDS), want, "ln_final(E[ids]) E^T", shown, "layers writing zero, tied head (no lm_head.weight)",
            f"{WHERE}: embed, the layers, ln_final, then F.linear with the head: the logits, not probabilities")  # fmt: skip


@rung(3)
def test_lm_untied_head_is_lm_head_weight():
    w = silenced(weights())
    x = TF.rms_norm(TF.embedding(IDS, w["token_embeddings.weight"]), (D,), w["ln_final.weight"], EPS)
    want = TF.linear(x, w["lm_head.weight"])
    shown = {"ln_final(E[ids]) E^T (the embeddings as the head)": TF.linear(x, w["token_embeddings.weight"])}
    explain(lm(w, IDS), want, "ln_final(E[ids]) lm_head^T", shown, "layers writing zero, lm_head.weight given",
            f"{WHERE}: the head is lm_head.weight when the model has one (tie_embeddings False)")  # fmt: skip


@rung(4)
def test_lm_runs_every_layer_in_order():
    w = weights()
    shown = {f"the formula with RoPE's theta at 10000, not rope_theta={THETA:g}": formula(w, IDS, theta=10000.0)}
    explain(lm(w, IDS), formula(w, IDS), "the two-layer formula", shown, "two layers",
            f"{WHERE}: x = layer(x, ...) for each layer of self.layers in order, each its own weights, "
            "each built with the model's settings (rope_theta, num_heads, context_length)")  # fmt: skip


@rung(5)
def test_lm_is_causal():
    w, ids = weights(), IDS.clone()
    ids[:, -1] = (ids[:, -1] + 1) % V
    a, b = lm(w, IDS), lm(w, ids)
    if not torch.equal(a[:, :-1], b[:, :-1]):
        changed = int((a[:, :-1] != b[:, :-1]).any(-1).sum())
        climb_failed(f"changing only the last token changed the logits at {changed} earlier position(s)",
                     f"{WHERE}: every layer's attention is causal; the rest acts on each position alone")  # fmt: skip


@rung(6)
def test_lm_passes_eps_to_every_norm():
    w = weights()
    w["token_embeddings.weight"] = w["token_embeddings.weight"] * 0.1
    explain(lm(w, IDS, eps=0.5), formula(w, IDS, eps=0.5), "the formula with eps=0.5", {},
            "eps=0.5, embeddings of RMS about 0.1", "the model's eps: every layer's ln1 and ln2 and ln_final use it")  # fmt: skip


@rung(7)
def test_lm_passes_token_positions_to_every_layer():
    w, positions = weights(), torch.tensor([[0, 2, 3, 7, 8], [1, 2, 4, 5, 9]])
    shown = {"the logits at the default positions 0-4": formula(w, IDS)}
    explain(lm(w, IDS, token_positions=positions), formula(w, IDS, positions=positions), "the formula at those "
            "positions", shown, "token_positions [[0, 2, 3, 7, 8], [1, 2, 4, 5, 9]]",
            f"{WHERE}: pass token_positions to every layer (default 0, 1, ... after what the cache holds)")  # fmt: skip


@rung(8)
def test_lm_padding_mask_hides_the_masked_keys():
    w, mask = weights(), torch.tensor([[False, True, True, True, True]] * 2)
    got = lm(w, IDS, attention_mask=mask)[:, 1:]
    want = lm(w, IDS[:, 1:], token_positions=torch.arange(1, 5).expand(2, 4))
    if not matches(got, want):
        seen = "the unmasked logits" if matches(got, lm(w, IDS)[:, 1:]) else "neither these nor the unmasked logits"
        climb_failed(f"attention_mask hiding key 0: the logits at positions 1-4 are {seen}, not those of tokens 1-4 "
                     "alone at positions 1-4", f"{WHERE}: pass attention_mask to every layer")  # fmt: skip


@rung(9)
def test_lm_cached_prefix_then_one_token_a_call_gives_the_same_logits():
    w = weights()
    with torch.no_grad():
        got = run_transformer_lm_cached(V, CTX, D, LAYERS, HEADS, D_FF, THETA, w, IDS, 2)
    want = formula(w, IDS)
    if not matches(got, want):
        where = [i for i in range(5) if not matches(got[:, i], want[:, i])]
        climb_failed(f"a cache per layer, tokens 0-1 in one call then one a call: positions {where} differ",
                     f"{WHERE}: give layer i kv_cache[i]; the default positions start after what the cache holds")  # fmt: skip


def ablation(w, norm, position, eps=EPS):
    with torch.no_grad():
        return run_transformer_lm_ablation(V, CTX, D, LAYERS, HEADS, D_FF, THETA, w, IDS, norm, position, "swiglu", eps)


@rung(10)
def test_lm_without_norms_has_no_final_norm_either():
    w = {k: v for k, v in weights().items() if not k.endswith(("ln1.weight", "ln2.weight", "ln_final.weight"))}
    explain(ablation(w, "none", "rope"), formula(w, IDS, norm="none"), "the formula without any norm", {},
            "norm='none'", f"{WHERE}: with norm='none', ln_final is the identity as ln1 and ln2 are")  # fmt: skip


@rung(11)
def test_lm_nope_rotates_nothing():
    w = weights()
    explain(ablation(w, "pre", "none"), formula(w, IDS, rope=False), "the formula without rotation",
            {"the RoPE model's logits": formula(w, IDS)}, "position='none' (NoPE)",
            "TransformerLM.__init__: with position='none' the layers get no RoPE (rope=None)")  # fmt: skip
