"""The package's layers: the model (cs336_basics/nn/: kernels, modules, state-dict names, tensor
parallelism) imports nothing above it; reading checkpoint files, generation and the CLIs import it.
No module imports back into a module that imports it, no folder into a folder that imports it, and
no function runs past one screen."""

import ast
import sys
from pathlib import Path

from cs336_basics import REPO

PACKAGE = REPO / "cs336_basics"
MAX_FUNCTION_LINES = 60  # one screen


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


def _package_imports(path: Path) -> set[str]:
    return {m for m in imported_modules(path) if m.startswith("cs336_basics.")}


def _module_file(name: str) -> Path | None:
    """The file of a module name (or of the module `name`'s last part is imported from)."""
    for candidate in (name, name.rpartition(".")[0]):
        path = REPO / (candidate.replace(".", "/") + ".py")
        if path.is_file():
            return path
    return None


def _is_leaf(name: str) -> bool:
    """A module of the package that imports nothing of the package (atomic_write): below every layer."""
    path = _module_file(name)
    return path is not None and not _package_imports(path)


def test_layering_nn_imports_nothing_of_the_package_outside_nn_but_leaves():
    above = {
        str(path.relative_to(REPO)): sorted(m for m in _package_imports(path)
                                            if not m.startswith("cs336_basics.nn") and not _is_leaf(m))
        for path in (PACKAGE / "nn").rglob("*.py")
    }  # fmt: skip
    assert {path: mods for path, mods in above.items() if mods} == {}


def test_layering_a_leaf_is_a_module_importing_nothing_of_the_package():
    assert _is_leaf("cs336_basics.atomic_write.atomic_open")
    assert not _is_leaf("cs336_basics.train.loop")
    assert not _is_leaf("cs336_basics.nowhere")


def test_layering_checkpoint_files_are_read_outside_nn():
    """File formats and package lookup (gguf, safetensors directories, importlib) live in checkpoints/."""
    readers = [str(p.relative_to(REPO)) for p in (PACKAGE / "nn").rglob("*.py")
               if {"gguf", "safetensors.torch", "importlib.util"} & imported_modules(p)]  # fmt: skip
    assert readers == []
    assert {"gguf", "hf", "gguf_tokenizer"} <= {p.stem for p in (PACKAGE / "checkpoints").glob("*.py")}


def test_layering_generation_never_imports_the_training_loop():
    """`cs336 generate --checkpoint` reads a run directory through train/run_dir.py, not the loop."""
    importers = [str(p.relative_to(REPO)) for p in (PACKAGE / "generation").rglob("*.py")
                 if any(m.startswith("cs336_basics.train.loop") for m in imported_modules(p))]  # fmt: skip
    assert importers == []
    assert "cs336_basics.train.run_dir.load_trained" in imported_modules(PACKAGE / "generation" / "generate_cli.py")


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, not `__init__`)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its text (a function's import too),
    without its own ancestors (importing a.b.c always runs a and a.b first: no arrow of its own)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        imported = {m for m in imported_modules(path) if m in modules}
        graph[name] = {m for m in imported if not name.startswith(m + ".") and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                on_stack.discard(w)
                component.append(w)
            on_stack.discard(v)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_layering_no_import_circle():
    assert _cycles(_import_graph()) == []


def _room(name: str, path: Path) -> str:
    """The folder a module lives in; a loose module of the package's or staff's top is a room of its own."""
    folder = path.parent.relative_to(REPO).as_posix()
    loose = folder in ("cs336_basics", "cs336_basics/staff") and path.name != "__init__.py"
    return name if loose else folder


def _room_graph() -> dict[str, set[str]]:
    """room -> the rooms its modules import, without its own sub-folders (a folder uses what it holds)."""
    modules, graph = _modules(), {}
    for name, imported in _import_graph().items():
        room = _room(name, modules[name])
        others = {_room(m, modules[m]) for m in imported}
        graph.setdefault(room, set()).update(r for r in others if r != room and not r.startswith(room + "/"))
    for targets in list(graph.values()):
        for r in targets:
            graph.setdefault(r, set())
    return graph


def test_layering_no_import_circle_between_folders():
    """Folders layer too: no folder imports, through any of its modules, a folder that imports it."""
    assert _cycles(_room_graph()) == []


def test_layering_no_function_longer_than_one_screen():
    """A function a reader can hold in their head: at most MAX_FUNCTION_LINES lines, docstring
    included, in the package, its tests and its benchmarks."""
    long = []
    for path in [p for d in (PACKAGE, REPO / "tests", REPO / "benchmarks") for p in d.rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_layering_adapter_checks_import_only_the_standard_library_numpy_and_torch():
    """The grader's worker runs tests/adapter_checks.py before the submission's package is
    imported: it may import nothing of the package (nor of tests/), whose code is the student's."""
    path = REPO / "tests" / "adapter_checks.py"
    tops = {name.split(".")[0] for name in imported_modules(path)}
    assert tops - set(sys.stdlib_module_names) <= {"numpy", "torch"}
