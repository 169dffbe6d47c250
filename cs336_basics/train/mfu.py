"""Model FLOPs utilisation (Chowdhery et al. 2022, PaLM, appendix B): the FLOPs the model needs
per second at the measured token rate (training FLOPs per token, cs336_basics/accounting, times
tokens/s) over the peak the devices can do. The peak is measured where the run trains, by a
square matrix multiply in the run's dtype (the best of a few), unless the configuration states one;
`cs336 train` prints it once at the start with how it was obtained (peak_flops)."""

import math
import time

import torch

from cs336_basics.accounting.flops import training_flops_per_token

# square matmuls of PEAK_SIZE (CPU) or ACCELERATOR_PEAK_SIZE, PEAK_PRODUCTS per timing, the fastest of
# PEAK_REPEATS timings: many short timings, so that on a shared machine some run undisturbed
PEAK_SIZE, ACCELERATOR_PEAK_SIZE, PEAK_REPEATS, PEAK_PRODUCTS = 512, 4096, 30, 1


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@torch.no_grad()
def measure_peak_flops(device: torch.device, dtype: torch.dtype = torch.float32, size: int | None = None) -> float:
    """FLOP/s of the fastest of PEAK_REPEATS timings of PEAK_PRODUCTS (size, size) @ (size, size)
    products, after one untimed warm-up: 2 size^3 PEAK_PRODUCTS / seconds."""
    size = size or (PEAK_SIZE if device.type == "cpu" else ACCELERATOR_PEAK_SIZE)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=generator).to(device, dtype) for _ in range(2))
    best = math.inf
    for i in range(PEAK_REPEATS + 1):
        _synchronize(device)
        start = time.perf_counter()
        for _ in range(PEAK_PRODUCTS):
            a @ b
        _synchronize(device)
        if i:
            best = min(best, time.perf_counter() - start)
    return 2 * size**3 * PEAK_PRODUCTS / max(best, 1e-9)


def peak_flops(stated: float, device: torch.device, dtype: torch.dtype, processes: int = 1) -> tuple[float, str]:
    """(FLOP/s of all `processes` together, how it was obtained): `stated` (the configuration's
    peak_flops, per process) if non-zero, else measured by measure_peak_flops on this device."""
    if stated:
        how = f"given by peak_flops={stated:.4g} per process"
    else:
        size = PEAK_SIZE if device.type == "cpu" else ACCELERATOR_PEAK_SIZE
        stated = measure_peak_flops(device, dtype)
        how = f"measured: the fastest of {PEAK_REPEATS} {size}x{size} {str(dtype).removeprefix('torch.')} matmuls on {device}"
    return processes * stated, f"{how}, x {processes} process(es)" if processes > 1 else how


def model_flops_per_token(model_config) -> float:
    """Forward and backward matmul FLOPs per token at the model's context length."""
    return training_flops_per_token(model_config)


def utilisation(tokens_per_s: float, flops_per_token: float, peak_flops_per_s: float) -> dict:
    """{"model_flops_per_s", "mfu"} for a token rate; the peak is that of all processes together."""
    achieved = tokens_per_s * flops_per_token
    return {"model_flops_per_s": float(f"{achieved:.4g}"), "mfu": float(f"{achieved / peak_flops_per_s:.4g}")}
