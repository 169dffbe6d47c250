"""What each tensor-parallel adapter computes, computed in one process: the grader draws fresh
public cases in its own multi-threaded process, where it starts no process group (a group's ranks
would be forked from a thread pool and bounded by a wall-clock timeout: a grade that depends on
load). Split over ranks or not, the computation is the same one:
- the gathered output of a column- or row-parallel linear is the linear's; the split FFN is the
  FFN; attention split by head is the attention; the split model is the model;
- the gradients of sum(module(x) * grad_output), x's then each weight's in key order, are the
  unsplit module's (Megatron's f and g make them so);
- how many collectives a rank issues depends on the module and the number of ranks, not on the
  values: a fresh draw of the same shapes issues what the stored case's reference issued."""

import torch
from torch import Tensor

from cs336_basics.nn.convert import load_state_dict
from cs336_basics.nn.modules.attention import MultiHeadSelfAttention
from cs336_basics.nn.modules.linear import Linear
from cs336_basics.nn.modules.rope import RotaryPositionalEmbedding
from cs336_basics.nn.modules.swiglu import SwiGLUFFN
from cs336_basics.staff.reference import adapters


def _without_world(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if k != "world_size"}


def _linear_args(kw: dict) -> tuple[str, dict]:
    return "run_linear", {k: kw[k] for k in ("d_in", "d_out", "weights", "in_features")}


# adapter -> (the single-process adapter, its arguments)
FORWARD = {
    "run_column_parallel_linear": _linear_args,
    "run_row_parallel_linear": _linear_args,
    "run_parallel_swiglu": lambda kw: ("run_swiglu", _without_world(kw)),
    "run_parallel_attention": lambda kw: ("run_multihead_self_attention_with_rope", _without_world(kw)),
    "run_parallel_transformer_lm": lambda kw: ("run_transformer_lm", _without_world(kw)),
}


def _linear(kw: dict, dtype: torch.dtype) -> tuple[torch.nn.Module, dict]:
    return Linear(kw["d_in"], kw["d_out"], dtype=dtype), {"weight": kw["weights"]}


def _swiglu(kw: dict, dtype: torch.dtype) -> tuple[torch.nn.Module, dict]:
    weights = {f"{w}.weight": kw[f"{w}_weight"] for w in ("w1", "w2", "w3")}
    return SwiGLUFFN(kw["d_model"], kw["d_ff"], dtype=dtype), weights


def _attention(kw: dict, dtype: torch.dtype) -> tuple[torch.nn.Module, dict]:
    """MultiHeadSelfAttention with RoPE, its key/value heads and state dict as the adapters make them."""
    a, d_model, heads = adapters(), kw["d_model"], kw["num_heads"]
    rope = RotaryPositionalEmbedding(kw["theta"], d_model // heads, kw["max_seq_len"])
    kv_heads = a._kv_heads(heads, d_model, kw["k_proj_weight"])
    module = MultiHeadSelfAttention(d_model, heads, kv_heads, rope=rope, dtype=dtype)
    return module, a._attn_weights(*(kw[f"{p}_proj_weight"] for p in "qkvo"))


# adapter -> the unsplit module and its state dict, from the adapter's arguments
BACKWARD = {
    "run_column_parallel_linear_backward": _linear,
    "run_row_parallel_linear_backward": _linear,
    "run_parallel_swiglu_backward": _swiglu,
    "run_parallel_attention_backward": _attention,
}
COLLECTIVES = {"run_parallel_swiglu_collectives"}


def gradients(adapter: str, kw: dict) -> Tensor:
    """The gradients a BACKWARD adapter returns, of the unsplit module, in kw's dtype."""
    x = kw["in_features"].detach().clone().requires_grad_()
    module, state_dict = BACKWARD[adapter](kw, x.dtype)
    load_state_dict(module, state_dict)
    with torch.enable_grad():
        module(x).backward(kw["grad_output"])
    grads = dict(module.named_parameters())
    return torch.cat([x.grad.flatten(), *(grads[k].grad.flatten() for k in sorted(state_dict))])
