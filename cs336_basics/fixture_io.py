"""The fixture file format, read and written in one place.

A fixture is one safetensors file `<name>.safetensors` holding:
  - `expected`: the reference output, computed and stored in float64;
  - `in/<arg>` for each tensor argument of the adapter, `in/<arg>/<key>` for a dict of tensors;
  - `mistake/<name>/index` and `mistake/<name>/value`: a fingerprint of what a known wrong
    implementation outputs on these inputs (values at a few flat indices), public cases only;
  - metadata: `adapter` (the run_* function), `component`, `scalars` (JSON of the non-tensor
    arguments), `out_dtype` (the dtype the output must have: the inputs' dtype), `tol`
    (the largest scaled error that passes; see cs336_basics/testing.py) and `mistakes`
    (JSON: each fingerprinted mistake's name and diagnosis in words).
"""

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from cs336_basics import REPO

FIXTURES_DIR = REPO / "fixtures"


@dataclass(frozen=True)
class Fingerprint:
    """What a known wrong implementation outputs at a few flat indices of this case's output."""

    diagnosis: str  # completes "your output equals what ... gives"
    index: torch.Tensor  # int64, flat indices into the output; empty: `value` is the wrong output's shape
    value: torch.Tensor  # float64, the wrong implementation's output there (or its shape)

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape of the wrong output when it is not the expected one (no values compared)."""
        return tuple(int(n) for n in self.value.tolist()) if self.index.numel() == 0 else None


@dataclass
class Fixture:
    name: str
    component: str
    adapter: str
    kwargs: dict  # the adapter's arguments: tensors, dicts of tensors and scalars
    expected: torch.Tensor  # float64
    out_dtype: torch.dtype
    tol: float
    mistakes: dict[str, Fingerprint] = field(default_factory=dict)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _metadata(path: Path) -> dict[str, str]:
    with safe_open(str(path), framework="pt") as f:
        return f.metadata()


def save_fixture(fixture: Fixture, directory: Path) -> Path:
    tensors = {"expected": fixture.expected.to(torch.float64).contiguous()}
    scalars = {}
    for arg, value in fixture.kwargs.items():
        if isinstance(value, torch.Tensor):
            tensors[f"in/{arg}"] = value.contiguous()
        elif isinstance(value, dict):
            tensors.update({f"in/{arg}/{key}": t.contiguous() for key, t in value.items()})
        else:
            scalars[arg] = value
    for name, fp in fixture.mistakes.items():
        tensors[f"mistake/{name}/index"] = fp.index.to(torch.int64).contiguous()
        tensors[f"mistake/{name}/value"] = fp.value.to(torch.float64).contiguous()
    metadata = {
        "adapter": fixture.adapter,
        "component": fixture.component,
        "scalars": json.dumps(scalars, sort_keys=True),
        "out_dtype": _dtype_name(fixture.out_dtype),
        "tol": repr(float(fixture.tol)),
        "mistakes": json.dumps({name: fp.diagnosis for name, fp in fixture.mistakes.items()}, sort_keys=True),
    }
    path = Path(directory) / f"{fixture.name}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)
    return path


def load_fixture(name: str, directory: Path = FIXTURES_DIR) -> Fixture:
    path = Path(directory) / f"{name}.safetensors"
    if not path.exists():
        raise FileNotFoundError(f"no fixture {name!r} at {path}; regenerate fixtures (see README)")
    metadata = _metadata(path)
    tensors = load_file(str(path))
    kwargs: dict = json.loads(metadata["scalars"])
    for key, tensor in tensors.items():
        if not key.startswith("in/"):
            continue
        _, arg, *rest = key.split("/", 2)
        if rest:
            kwargs.setdefault(arg, {})[rest[0]] = tensor
        else:
            kwargs[arg] = tensor
    mistakes = {
        name: Fingerprint(diagnosis, tensors[f"mistake/{name}/index"], tensors[f"mistake/{name}/value"])
        for name, diagnosis in json.loads(metadata.get("mistakes", "{}")).items()
    }
    return Fixture(
        name=name,
        component=metadata["component"],
        adapter=metadata["adapter"],
        kwargs=kwargs,
        expected=tensors["expected"],
        out_dtype=getattr(torch, metadata["out_dtype"]),
        tol=float(metadata["tol"]),
        mistakes=mistakes,
    )


@functools.cache
def _header_of(path: Path, mtime_ns: int) -> tuple[str, str]:
    """(component, adapter) of a fixture file."""
    metadata = _metadata(path)
    return metadata["component"], metadata["adapter"]


def fixture_names(component: str, directory: Path = FIXTURES_DIR) -> list[str]:
    """The names of the stored fixtures of one component: its forward cases, then its backward
    ones (a gradient is worth reading once the output is right), each by name. Reads each file's
    header once per process (again if the file changes): every test module asks at collection."""
    headers = {p: _header_of(p, p.stat().st_mtime_ns) for p in Path(directory).glob("*.safetensors")}
    mine = [(adapter.endswith("_backward"), p.stem) for p, (c, adapter) in headers.items() if c == component]
    return [name for _, name in sorted(mine)]
