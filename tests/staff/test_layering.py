"""The package's layers: the model (cs336_basics/nn/: kernels, modules, state-dict names, tensor
parallelism) imports nothing above it; reading checkpoint files, generation and the CLIs import it."""

import ast
from pathlib import Path

from cs336_basics import REPO

PACKAGE = REPO / "cs336_basics"


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (absolute names; relative imports resolved against its package)."""
    tree, names = ast.parse(path.read_text()), set()
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


def test_layering_nn_imports_nothing_of_the_package_outside_nn():
    above = {
        str(path.relative_to(REPO)): sorted(m for m in imported_modules(path)
                                            if m.startswith("cs336_basics.") and not m.startswith("cs336_basics.nn"))
        for path in (PACKAGE / "nn").rglob("*.py")
    }  # fmt: skip
    assert {path: mods for path, mods in above.items() if mods} == {}


def test_layering_checkpoint_files_are_read_outside_nn():
    """File formats and package lookup (gguf, safetensors directories, importlib) live in checkpoints/."""
    readers = [str(p.relative_to(REPO)) for p in (PACKAGE / "nn").rglob("*.py")
               if {"gguf", "safetensors.torch", "importlib.util"} & imported_modules(p)]  # fmt: skip
    assert readers == []
    assert {"gguf", "hf", "gguf_tokenizer"} <= {p.stem for p in (PACKAGE / "checkpoints").glob("*.py")}
