"""The GPU tier (`uv run pytest -m gpu`): your code on CUDA, or on Apple's MPS where there is no
CUDA, within the tolerances it meets on the CPU. Every public fixture of a component that computes
on the tensors it is given runs on the device, compared with the stored float64 expected output
within the fixture's own tolerance (float32 and bfloat16 cases; float64 ones too on CUDA: MPS has
no float64); a few steps of `cs336 train` under torchrun (DistributedDataParallel with a process
group of one) on CUDA, or in one process on MPS; `cs336 evaluate` of that run on the device and on
the CPU; and greedy generation on SmolLM2's weights, token for token as on the CPU.

Skipped where neither device is present; `pytest` alone leaves the tier out (it is marked slow
too), `--all` runs it. CS336_GPU_TIER_DEVICE=cpu runs it on the CPU: a check of the tier itself."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from cs336_basics.evaluate import evaluate_model, shown
from cs336_basics.fixture_io import FIXTURES_DIR, load_fixture
from cs336_basics.testing import compare, tolerance
from cs336_basics.train.loop import resolve_config, train
from cs336_basics.train.run_dir import load_trained
from cs336_basics.train.toy_stories import toy_stories

from . import adapters


def _device() -> str | None:
    if os.environ.get("CS336_GPU_TIER_DEVICE"):
        return os.environ["CS336_GPU_TIER_DEVICE"]
    return "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else None


DEVICE = _device()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(DEVICE is None, reason="no CUDA or MPS device: the GPU tier runs where there is one"),
]
REPO = Path(__file__).resolve().parents[1]

# What does not compute on the tensors it is given, so does not run on a device: the schedule
# (numbers), get_batch and the checkpoint (their scenarios hold the device or files), BPE (text),
# tensor parallelism (gloo process groups on the CPU), and draws from a seeded CPU generator,
# whose stream on a device is another one (the sampled generate cases, run_sample_next_token).
ON_THE_CPU = {"lr_schedule", "get_batch", "checkpoint", "train_bpe", "tokenizer", "parallel"}
DRAWS = {"run_sample_next_token"}


def _on_device(value, device: str):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _on_device(v, device) for k, v in value.items()}
    return value


def _skip_reason(fx, device: str) -> str | None:
    if fx.component in ON_THE_CPU or fx.adapter in DRAWS or fx.kwargs.get("temperature", 0.0) != 0.0:
        return f"{fx.component} ({fx.adapter}) computes on the CPU"
    tensors = [t for t in fx.kwargs.values() if isinstance(t, torch.Tensor)]
    if device == "mps" and any(t.dtype == torch.float64 for t in tensors):
        return "MPS has no float64"
    return None


@pytest.mark.parametrize("case", sorted(p.stem for p in FIXTURES_DIR.glob("*.safetensors")))
def test_gpu_fixture(case):
    fx = load_fixture(case)
    reason = _skip_reason(fx, DEVICE)
    if reason:
        pytest.skip(reason)
    try:
        with torch.no_grad():
            actual = getattr(adapters, fx.adapter)(**_on_device(fx.kwargs, DEVICE))
    except NotImplementedError as e:
        pytest.skip(f"not implemented yet: {e}")
    assert actual.device.type in (torch.device(DEVICE).type, "cpu")  # a count or ids may come back on the CPU
    result = compare(actual.cpu(), fx.expected, fx.tol, out_dtype=fx.out_dtype)
    assert result.ok, f"{fx.adapter} on fixture {case!r} on {DEVICE}: {result.message}"


TINY = {"vocab_size": "300", "context_length": "128", "d_model": "32", "num_layers": "1", "num_heads": "2",
        "d_ff": "64", "batch_size": "8", "warmup_steps": "2", "max_steps": "8", "log_interval": "1",
        "eval_interval": "8", "eval_batches": "2", "checkpoint_interval": "8", "progress": "false",
        "threads": "1", "peak_flops": "1e12"}  # fmt: skip


@pytest.fixture(scope="module")
def device_run(tmp_path_factory) -> Path:
    """8 steps of a tiny model on the device: under torchrun with one process (DDP) on CUDA or the
    CPU, in this process on MPS (gloo, DDP's CPU backend, does not take MPS tensors)."""
    root = tmp_path_factory.mktemp("gpu_run")
    corpus = root / "stories.txt"
    corpus.write_text(toy_stories(np.random.default_rng(0), 200))
    settings = {**TINY, "corpus": corpus, "out_dir": root / "run", "device": DEVICE}
    try:
        if DEVICE == "mps":
            train(resolve_config(None, {k: str(v) for k, v in settings.items()}, resume=False))
        else:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
                   "-m", "cs336_basics", "train", *(f"--{k}={v}" for k, v in settings.items())]  # fmt: skip
            done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
            if "NotImplementedError" in done.stderr:
                pytest.skip("training needs every component; not implemented yet")
            assert done.returncode == 0, done.stderr[-3000:]
    except NotImplementedError as e:
        pytest.skip(f"training needs every component; not implemented yet: {e}")
    return root / "run"


def test_gpu_train_steps_lower_the_loss(device_run):
    records = [json.loads(line) for line in (device_run / "metrics.jsonl").read_text().splitlines()]
    losses = [r["train_loss"] for r in records if "train_loss" in r]
    assert len(losses) == int(TINY["max_steps"]) and all(math.isfinite(x) for x in losses), losses
    assert losses[-1] < losses[0], f"the training loss did not fall on {DEVICE}: {losses}"


def test_gpu_evaluate_on_the_device_agrees_with_the_cpu(device_run):
    on_cpu = evaluate_model(*load_trained(device_run), int(TINY["vocab_size"]))
    on_device = evaluate_model(*load_trained(device_run, DEVICE), int(TINY["vocab_size"]))
    # float32 logits from other kernels: the mean loss within the float32 rule's tolerance at the unit roundoff
    rtol = tolerance(0.0, torch.float32)
    for name in ("nats_per_token", "bits_per_byte"):
        a, b = getattr(on_device, name), getattr(on_cpu, name)
        assert abs(a - b) <= rtol * abs(b), f"{name}: {shown(a)} on {DEVICE}, {shown(b)} on the CPU ({a!r}, {b!r})"


PROMPTS = ("What is the capital of France?", "Write a haiku about the sea.", "List three prime numbers.")


def test_gpu_greedy_generation_on_smollm2_equals_the_cpu_tokens():
    from cs336_basics.checkpoints.gguf import load_gguf_model, smollm2_path
    from cs336_basics.generation.generate import generate

    from .test_smollm2 import chat_ids, needs_every_component

    model, reader = needs_every_component(load_gguf_model, smollm2_path())
    prompts = [chat_ids(reader, p) for p in PROMPTS]
    on_cpu = [list(generate(model, ids, 24, eos_token_ids=[2])) for ids in prompts]
    model = model.to(DEVICE)
    on_device = [list(generate(model, ids, 24, eos_token_ids=[2])) for ids in prompts]
    assert on_device == on_cpu
