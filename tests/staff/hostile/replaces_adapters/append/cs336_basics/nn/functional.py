# hostile sample replaces_adapters: appended to the handout's nn/functional.py (a file students fill in, which the grader does not restore); its import-time
# code hands the grader an adapters module of its own, computed by the PyTorch built-ins
import sys as _sys, types as _types
import torch as _torch

_fake = _types.ModuleType("adapters")
_fake.run_linear = lambda d_in, d_out, weights, in_features: _torch.nn.functional.linear(in_features, weights)
_fake.run_silu = lambda in_features: _torch.nn.functional.silu(in_features)
_fake.run_softmax = lambda in_features, dim: _torch.softmax(in_features, dim)
_fake.run_embedding = lambda vocab_size, d_model, weights, token_ids: weights[token_ids]
_sys.modules["adapters"] = _fake
