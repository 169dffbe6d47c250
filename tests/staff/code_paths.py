"""The CPU code paths one machine can reach, each a process of its own: the matrix the declared
floors are measured over (`uv run python -m tests.staff.measure_floors --matrix`).

Four switches choose how PyTorch computes on a CPU, and each is read once, when a process starts:
- ATEN_CPU_CAPABILITY: PyTorch's vector kernels (elementwise ops, reductions, softmax): `default`
  (no vector instructions), `avx2`, `avx512`, up to what the CPU has;
- MKL_CBWR: MKL's code branch for float32/float64 matrix products: unset (MKL's own dispatch),
  COMPATIBLE (SSE2: what MKL runs where it does not recognise the CPU, as on AMD's), AVX2, AVX512,
  AUTO (the best branch, reproducibly);
- oneDNN, which computes bfloat16 matrix products on a CPU with AVX-512 and PyTorch's own GELU:
  its best instructions (AMX here), AVX512_CORE_BF16 (ONEDNN_MAX_CPU_ISA: AMD's Zen 4 has no AMX),
  or off (PyTorch's own kernels, as for bfloat16 products on a CPU without AVX-512);
- threads: one (the tests and the grader), two (a script, `cs336 fixtures`).
The matrix is every capability x MKL branch x thread count with oneDNN at its best, and every
capability x oneDNN setting x thread count with MKL unset: what oneDNN computes here is never
MKL's (MKL computes no bfloat16 and no elementwise function).
"""

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from cs336_basics import REPO

MKL_BRANCHES = ("", "COMPATIBLE", "AVX2", "AVX512", "AUTO")  # "": unset
ONEDNN = ("", "AVX512_CORE_BF16", "off")  # "": its best instructions; off: torch.backends.mkldnn disabled
THREADS = (1, 2)
SWITCHES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
MKLDNN_OFF = "CS336_MKLDNN_OFF"  # read by mkldnn_switch(): oneDNN has no environment variable for "off"


@dataclass(frozen=True)
class CodePath:
    capability: str
    mkl: str = ""
    onednn: str = ""
    threads: int = 1

    @property
    def label(self) -> str:
        return f"{self.capability}/{self.mkl or '-'}/{self.onednn or '-'}/{self.threads}t"

    def environ(self) -> dict[str, str]:
        """os.environ with this path's switches (and none of the parent's)."""
        env = {k: v for k, v in os.environ.items() if k not in (*SWITCHES, MKLDNN_OFF)}
        env |= {"ATEN_CPU_CAPABILITY": self.capability, "OMP_NUM_THREADS": str(self.threads)}
        env |= {"MKL_NUM_THREADS": str(self.threads)}
        if self.mkl:
            env["MKL_CBWR"] = self.mkl
        if self.onednn == "off":
            env[MKLDNN_OFF] = "1"
        elif self.onednn:
            env["ONEDNN_MAX_CPU_ISA"] = self.onednn
        return env


def capabilities() -> tuple[str, ...]:
    """PyTorch's CPU capabilities this CPU can run (the instructions it has, whatever the environment says)."""
    has = {"default": True, "avx2": torch.cpu._is_avx2_supported(), "avx512": torch.cpu._is_avx512_supported()}
    return tuple(name for name, ok in has.items() if ok)


def matrix() -> list[CodePath]:
    """Every code path of the matrix this machine reaches (the module docstring)."""
    caps = capabilities()
    avx512 = "avx512" in caps
    mkl = [b for b in MKL_BRANCHES if avx512 or b != "AVX512"]
    onednn = [o for o in ONEDNN if avx512 or o == ""]  # without AVX-512, PyTorch never calls oneDNN for bfloat16
    paths = [CodePath(c, m, "", t) for c in caps for m in mkl for t in THREADS]
    return paths + [CodePath(c, "", o, t) for c in caps for o in onednn if o for t in THREADS]


def mkldnn_switch() -> None:
    """In a process a CodePath started: PyTorch's oneDNN off if the path says so."""
    if os.environ.get(MKLDNN_OFF) == "1":
        torch.backends.mkldnn.enabled = False


def run_json(path: CodePath, module: str, args: list[str]) -> dict:
    """`python -m module *args --json FILE` in a process on `path`; what it wrote to FILE."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, "-m", module, *args, "--json", str(out)]
        subprocess.run(cmd, env=path.environ(), cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())
