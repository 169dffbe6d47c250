"""The measured floors of the ungraded comparisons: our kernels and modules against PyTorch's
built-ins (one by one, and every kernel in every dtype), against Hugging Face's modules, and
cached against whole-sequence runs. One entry per comparison, written here only; its tolerance is
testing.tolerance(floor, dtype), the rule the graded cases follow (tests/README.md).

A floor is the largest max scaled error |a - e| / (|e| + rms(e)) the comparison gives for a
correct implementation over the seeds its test module's `measure_floors()` draws: in a public test
(a student's code meets it) the reference and every accepted variant of the components compared
(each exact way of writing the formula the staff catalogue knows), in a staff test the reference
alone; and over the CPU code paths of the course staff's machine (PyTorch's vector kernels, MKL's
branches, oneDNN, threads), rounded up to two digits. The course staff re-measure every entry with
one script whenever a kernel changes.
"""

from dataclasses import dataclass

import torch

from cs336_basics.testing import scaled_error, tolerance

F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16


@dataclass(frozen=True)
class Floor:
    value: float  # the measured max scaled error, rounded up
    dtype: torch.dtype  # the dtype the comparison runs in: sets the margin and the unit roundoff
    compares: str  # what is measured against what

    @property
    def tol(self) -> float:
        return tolerance(self.value, self.dtype)


# name: "<component>.<comparison>"; the component is the test module's (test_<component>.py).
FLOORS: dict[str, Floor] = {
    "gelu.f64": Floor(5.8e-16, F64, "F.gelu vs torch's F.gelu, exact and tanh forms"),
    "attention.f64": Floor(6.9e-16, F64, "F.scaled_dot_product_attention vs torch's (masks, no mask)"),
    "attention.f64_large_scores": Floor(
        7.3e-13,
        F64,
        "F.scaled_dot_product_attention vs torch's, scores ~1e4 (exp(s - logsumexp(s)) rounds at ulp(1e4))",
    ),
    "attention.f32": Floor(6.5e-7, F32, "run_scaled_dot_product_attention in float32 vs torch's in float64"),
    "attention.bf16": Floor(1.1e-2, BF16, "ours and torch's in bfloat16, each vs torch's in float64"),
    "rope.f64": Floor(0.0, F64, "F.rope vs Meta's complex-number rotation"),
    "rope.f32": Floor(1.2e-7, F32, "run_rope in float32 vs the complex rotation in float64"),
    "rope.hf": Floor(4.1e-6, F32, "run_rope vs HF's rotate-half on de-interleaved dims (float32 angles)"),
    "rope.bf16": Floor(2.8e-3, BF16, "run_rope in bfloat16 vs the complex rotation in float64"),
    "rope.offset": Floor(2.8e-15, F64, "<RoPE(q, m), RoPE(k, n)> at (10, 3) vs at (50, 43)"),
    "mha.f64": Floor(4.8e-15, F64, "the MHA adapters vs F.linear + torch's SDPA (+ complex RoPE)"),
    "mha.hf": Floor(8.2e-7, F32, "MultiHeadSelfAttention vs HF LlamaAttention (eager)"),
    "mha.cache": Floor(1.2e-6, F32, "prefill + one token at a time vs the whole sequence"),
    "block.f64": Floor(5.8e-15, F64, "run_transformer_block vs the block written with built-ins"),
    "block.ablations": Floor(6.6e-15, F64, "TransformerBlock's post-norm, no-norm and SiLU-FFN variants vs built-ins"),
    "block.hf": Floor(2.8e-7, F32, "TransformerBlock vs HF LlamaDecoderLayer"),
    "lm.hf": Floor(2.5e-5, F32, "TransformerLM vs HF LlamaForCausalLM (HF's float32 RoPE angles drift at seq 64)"),
    "lm.nope": Floor(3.0e-15, F64, "TransformerLM with position='none' vs built-ins, no rotation"),
    "lm.cache": Floor(1.5e-6, F32, "TransformerLM: cached prefix + one token at a time vs the whole sequence"),
    "silu.f64": Floor(1.3e-16, F64, "F.silu vs torch's"),
    "softmax.f64": Floor(7.0e-16, F64, "F.softmax vs torch's, along every dim"),
    "swiglu.f64": Floor(5.3e-16, F64, "F.swiglu_ffn vs SwiGLU written with built-ins"),
    "layernorm.f64": Floor(3.8e-16, F64, "F.layernorm and LayerNorm vs torch's, with and without bias"),
    "rmsnorm.cast_orders_bf16": Floor(5.1e-3, BF16, "RMSNorm's two cast orders in bfloat16 vs float64"),
    "ffn_block.f64": Floor(3.5e-16, F64, "run_ffn_block vs itself on torch's kernels, three configurations"),
    "gradient_clipping.f64": Floor(0.0, F64, "clipped gradients vs torch.nn.utils.clip_grad_norm_"),
    "adamw.torch_adam_f64": Floor(2.2e-16, F64, "200 steps of AdamW (decay 0, eps 0) vs torch.optim.AdamW"),
    "adamw.torch_decay_f64": Floor(0.0, F64, "200 steps of AdamW's decay alone vs torch.optim.AdamW"),
    "cross_entropy.f64": Floor(2.9e-16, F64, "F.cross_entropy vs torch's, logits of std 3 and 1e4"),
    "cross_entropy.f64_offset": Floor(
        6.0e-14, F64, "F.cross_entropy vs torch's, logits near 1000 (m + lse rounds at ulp(m))"
    ),
    "cross_entropy.grad_f64": Floor(3.2e-15, F64, "d F.cross_entropy / d logits vs torch's"),
    "parallel.f32": Floor(3.9e-7, F32, "parallel layers at W = 1, 2, 4 vs the single-process ones: output, every grad"),
    "parallel.f64": Floor(6.5e-16, F64, "parallel layers at W = 1, 2, 4 vs the single-process ones, float64"),
    "parallel.heads": Floor(1.2e-15, F64, "attention split by head at W = 1, 2, 4 vs one process: output, input grad"),
    # Hugging Face modules built from a config (the course staff's suite)
    "swiglu.hf": Floor(5.5e-7, F32, "SwiGLUFFN vs HF LlamaMLP"),
    "swiglu.hf_f64": Floor(8.8e-16, F64, "SwiGLUFFN vs HF LlamaMLP in float64"),
    "rmsnorm.hf": Floor(0.0, F32, "RMSNorm vs HF LlamaRMSNorm (the same operations in the same order)"),
    "ffn_block.hf": Floor(8.0e-8, F32, "FFNBlock vs x + LlamaMLP(LlamaRMSNorm(x))"),
    "positionwise_ffn.gpt_neox": Floor(7.7e-7, F32, "PositionWiseFFN vs HF GPTNeoXMLP"),
    "positionwise_ffn.gpt_neox_f64": Floor(1.5e-15, F64, "PositionWiseFFN vs HF GPTNeoXMLP in float64"),
    "positionwise_ffn.gpt2": Floor(7.5e-7, F32, "PositionWiseFFN vs HF GPT2MLP (Conv1D's addmm sums in another order)"),
    "positionwise_ffn.gpt2_f64": Floor(1.9e-15, F64, "PositionWiseFFN vs HF GPT2MLP in float64"),
    # the real SmolLM2-135M weights (GGUF, dequantized to float32), our model vs transformers'
    "smollm2.hf": Floor(1.2e-5, F32, "TransformerLM's logits vs transformers' GGUF load of the file, chat prompts"),
    # tensor parallelism: the adapters and DTensor at W = 1, 2, 4; the whole LM split over ranks
    "parallel.adapters": Floor(
        3.8e-7, F32, "run_column/row_parallel_linear, run_parallel_swiglu at W = 1, 2, 4 vs F.linear, the FFN"
    ),
    "parallel.dtensor": Floor(2.2e-7, F32, "parallel layers at W = 1, 2, 4 vs DTensor's parallelize_module"),
    "parallel.dtensor_f64": Floor(4.5e-16, F64, "parallel layers at W = 1, 2, 4 vs DTensor's, float64"),
    "parallel_transformer.f32": Floor(
        1.2e-6, F32, "the parallel LM at W = 2 (and one process) in float32 vs the float64 truth: logits"
    ),
}


# The kernels' tables, one row per kernel (its rows are tests/test_dtypes.py's KERNELS, each a row
# of a kernel of tests/oracles.py's BUILTIN_KERNELS) and a floor per dtype (float32, float64,
# bfloat16, float16): each cell an entry "<kernel>.<kind>_<dtype>" of FLOORS.
KERNEL_DTYPES = (F32, F64, BF16, torch.float16)
KERNEL_KINDS = {
    "builtin": "ours vs the built-in run in the same dtype, on tests/test_dtypes.py's fixed input",
    "random": "ours vs the built-in in the same dtype over random shapes, scales and offsets",
}
KERNEL_TABLES = {  #        float32   float64   bfloat16  float16
    "builtin": {
        "linear": (0.0, 0.0, 0.0, 0.0),
        "embedding": (0.0, 0.0, 0.0, 0.0),
        "silu": (7.8e-8, 1.5e-16, 0.0, 0.0),
        "gelu": (3.2e-7, 1.3e-16, 2.1e-6, 1.1e-6),
        "gelu_tanh": (8.1e-8, 1.6e-16, 8.0e-8, 9.5e-8),
        "relu": (0.0, 0.0, 0.0, 0.0),
        "swiglu": (2.7e-7, 3.3e-16, 6.9e-3, 9.0e-4),
        "positionwise_ffn": (3.3e-7, 1.2e-15, 7.4e-3, 9.8e-4),
        "rmsnorm": (1.3e-7, 1.6e-16, 4.9e-3, 5.7e-4),
        "layernorm": (1.9e-7, 4.6e-16, 0.0, 0.0),
        "softmax": (2.9e-7, 5.3e-16, 0.0, 2.4e-5),
    },
    # positionwise_ffn in half precision: ours rounds W1 x (and W2 h) to the dtype before adding
    # the bias, torch's addmm rounds once
    "random": {
        "linear": (2.8e-7, 5.3e-16, 0.0, 0.0),
        "embedding": (0.0, 0.0, 0.0, 0.0),
        "silu": (1.1e-7, 1.8e-16, 0.0, 1.9e-4),
        "gelu": (3.2e-6, 6.3e-16, 5.7e-5, 2.7e-4),
        "gelu_tanh": (3.8e-7, 4.9e-16, 3.0e-7, 2.6e-4),
        "relu": (0.0, 0.0, 0.0, 0.0),
        "swiglu": (9.4e-7, 1.7e-15, 0.0, 8.5e-5),
        "positionwise_ffn": (7.1e-7, 1.1e-15, 1.9e-2, 2.7e-3),
        "rmsnorm": (0.0, 0.0, 0.0, 0.0),
        "layernorm": (6.7e-7, 1.1e-15, 1.3e-3, 5.3e-4),
        "softmax": (2.3e-7, 5.4e-16, 2.9e-3, 5.3e-4),
    },
}
# each kernel's gradients against the built-in's, float64 (tests/test_gradients.py): "<kernel>.grad"
GRADIENT = {
    "linear": 0.0,
    "embedding": 0.0,
    "silu": 1.5e-16,
    "gelu": 1.5e-16,
    "gelu_tanh": 9.3e-16,
    "relu": 0.0,
    "swiglu": 2.8e-16,
    "positionwise_ffn": 2.8e-16,
    "rmsnorm": 1.7e-16,
    "layernorm": 9.7e-16,
    "softmax": 3.9e-16,
}


def kernel_floor_name(kind: str, kernel: str, dtype: torch.dtype) -> str:
    """The FLOORS entry of a kernel table's cell: "<kernel>.<kind>_<dtype>" ("silu.builtin_float32")."""
    return f"{kernel}.{kind}_{str(dtype).removeprefix('torch.')}"


FLOORS |= {
    kernel_floor_name(kind, kernel, dtype): Floor(value, dtype, f"{kernel}: {KERNEL_KINDS[kind]}")
    for kind, table in KERNEL_TABLES.items()
    for kernel, row in table.items()
    for value, dtype in zip(row, KERNEL_DTYPES, strict=True)
}
FLOORS |= {f"{k}.grad": Floor(v, F64, f"{k}: its gradients vs the built-in's, float64") for k, v in GRADIENT.items()}


def tol(name: str) -> float:
    """The tolerance of comparison `name`: tolerance(FLOORS[name].value, FLOORS[name].dtype)."""
    return FLOORS[name].tol


def kernel_tol(kind: str, kernel: str, dtype: torch.dtype) -> float:
    """The tolerance of a kernel table's cell (KERNEL_TABLES)."""
    return tol(kernel_floor_name(kind, kernel, dtype))


class MaxErrors(dict):
    """{floor name: the largest max scaled error kept under it}: what a measure_floors() returns."""

    def keep(self, name: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
        if name not in FLOORS:
            raise KeyError(f"{name!r} is not in tests/floors.py's FLOORS")
        self[name] = max(self.get(name, 0.0), float(scaled_error(actual, expected).max()))

    @classmethod
    def of(cls, name: str, pairs) -> "MaxErrors":
        """{name: the largest max scaled error} over (actual, expected) pairs."""
        errors = cls()
        for actual, expected in pairs:
            errors.keep(name, actual, expected)
        return errors
