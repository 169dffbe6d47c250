from pathlib import Path

# The repository (or handout) root: fixtures/, tests/ and the package sit in it.
REPO = Path(__file__).resolve().parent.parent

# The graded components, in the order students build them, and each one's points: its weight in
# the grade, shared equally by its test cases, public (fixtures/) and hidden. The grader reads
# them from its own copy of the package, never from a submission's. Every test's name carries a
# component, so `uv run pytest -k <component>` selects that component's tests. Defined here, with
# no torch import, so that `cs336 --help` and `cs336 status` start at once.
#
# The ablations (TransformerLMConfig's norm / position / ffn: post-norm, no RMSNorm, NoPE, the SiLU
# FFN) carry no points of their own: the public tests pin them (tests/test_block.py, test_lm.py,
# test_train.py), the experiments they serve are graded from the student's write-up (handout,
# "Experiments"), and points here would change every submission's total.
POINTS: dict[str, int] = {
    "linear": 10,
    "embedding": 5,
    "silu": 5,
    "gelu": 10,
    "softmax": 10,
    "rmsnorm": 10,
    "layernorm": 10,
    "swiglu": 15,
    "positionwise_ffn": 10,
    "ffn_block": 15,
    "attention": 15,
    "rope": 15,
    "mha": 20,
    "block": 10,
    "lm": 15,
    "generate": 10,
    "cross_entropy": 10,
    "adamw": 15,
    "lr_schedule": 5,
    "gradient_clipping": 5,
    "get_batch": 10,
    "checkpoint": 10,
    "train_bpe": 20,
    "tokenizer": 15,
    "parallel": 15,
}
COMPONENTS = tuple(POINTS)
