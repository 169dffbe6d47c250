"""The student handout: this repository with every solution region replaced by a stub.

    build_handout(out_dir)                        -> out_dir, a fresh student repository
    restore_solutions(handout_dir, reference_dir) -> the regions put back (all, or those `select` picks)
    solution_regions(path)                        -> the regions of one file, with the enclosing def

A solution region is the lines from `# BEGIN SOLUTION` to `# END SOLUTION`, both inclusive,
inside a function. In the handout it becomes one line at the marker's indentation,
`raise NotImplementedError("Implement <qualname>: <first sentence of its docstring>; ...")`;
the signature, docstring, annotations and argument checks around it stay. Write
`# BEGIN SOLUTION: <message>` to choose the message yourself.

What ships (everything else is staff-only; see tests/staff/test_handout.py for the checks):
    cs336_basics/ minus cs336_basics/staff/
    tests/        minus tests/staff/ (the drift check, the mistake catalogue, the hidden suite,
                  the handout and grader tests: whatever must not reach students lives there)
    fixtures/     public fixtures only (hidden_fixtures/ is never read)
    .gitignore, README.md (from handout/README.md), pyproject.toml (derived), uv.lock (`uv lock`)
.ci/ does not ship: it runs the staff suite, which a handout fails until the work is done.
"""

import ast
import json
import re
import shutil
import subprocess
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cs336_basics import COMPONENTS, REPO, source_rule

PACKAGE = "cs336_basics"
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
# Path parts that never ship: cs336_basics/staff/ and tests/staff/ are the staff's by location.
NEVER_SHIPPED = {"staff", "hidden_fixtures", "__pycache__", ".pytest_cache", ".hypothesis"}
ALWAYS_DEV = {"pytest"}  # runs the tests
# The staff suite type-checks every annotated function at run time (jaxtyping's import hook and
# beartype, in pytest's addopts); the handout does not: decorating the package at import was most
# of a student's `pytest -k <component>` run, and the argument checks name a wrong shape anyway.
STAFF_ONLY_ADDOPTS = ("--jaxtyping-packages=",)
# Never in the student's environment: the tests that use them skip there (their comparisons run in
# the staff suite), and installing or importing them would slow every student run.
STAFF_ONLY_DEV = {"transformers", "accelerate", "hypothesis", "copydetect"}


@dataclass
class Region:
    """One solution region: lines[start:end + 1] of `path`, markers included (0-based)."""

    path: Path
    start: int
    end: int
    indent: str
    qualname: str  # "functional.swiglu_ffn", "SwiGLUFFN.__init__"
    component: str | None  # the COMPONENTS entry it belongs to, if any
    message: str
    lines: list[str]  # the original text, BEGIN and END lines included, with line endings

    @property
    def stub(self) -> str:
        return f"{self.indent}raise NotImplementedError({json.dumps(self.message)})\n"


def _summary(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    if not doc:
        return ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    match = re.search(r"\.(?=\s+[^\d\s])", text)  # not "eq. 7" or "et al. 2017"
    return text[: match.end()] if match else text


# Defs and classes whose names do not start with their component's name (underscores ignored).
ALIASES = {
    "scaleddotproductattention": "attention",
    "rotarypositionalembedding": "rope",
    "causalmask": "mha",
    "groupedqueryattention": "mha",
    "multihead": "mha",  # functional.multihead_self_attention, MultiHeadSelfAttention
    "transformerblock": "block",
    "transformerlm": "lm",
    "savecheckpoint": "checkpoint",
    "loadcheckpoint": "checkpoint",
}


# Files (folder/name) whose regions belong to a component other than their folder or name says.
FILE_COMPONENTS = {
    "tokenizer/pretokenize.py": "train_bpe",  # train_bpe needs it first; the tokenizer reuses it
    "tokenizer/train_bpe.py": "train_bpe",  # its own component, in the tokenizer's folder
    "modules/attention.py": "mha",  # MultiHeadSelfAttention: README's mha section
    "generation/sampling.py": "generate",  # sample_next_token and top_p: README's generate section
}


def _component(qualname: str, path: Path | None = None) -> str | None:
    """`SwiGLUFFN.forward` and `functional.swiglu_ffn` -> swiglu: the longest component name (or
    ALIASES key) that starts the def's or class's name, underscores ignored. A file in a package
    named after a component (nn/parallel/swiglu.py: ParallelSwiGLUFFN is README's parallel
    section), else named after one (nn/modules/rope.py), belongs to that component, whatever its
    defs are called; FILE_COMPONENTS overrides both (tokenizer/train_bpe.py -> train_bpe)."""
    if path is not None:
        named = FILE_COMPONENTS.get(f"{path.parent.name}/{path.name}")
        for component in (named, path.parent.name, path.stem):
            if component in COMPONENTS:
                return component
    name = qualname.removeprefix("functional.").removeprefix(f"{path.stem}." if path else "")
    name = name.split(".")[0].lower().replace("_", "")
    names = {c.replace("_", ""): c for c in COMPONENTS} | ALIASES
    found = [key for key in names if name.startswith(key)]
    return names[max(found, key=len)] if found else None


def _enclosing_defs(tree: ast.Module) -> list[tuple[ast.AST, str, str | None]]:
    """Every def with its qualified name and the docstring to describe it by (its own, else its class's)."""
    found = []

    def visit(node, prefix: str, class_doc: str | None):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", ast.get_docstring(child))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((child, prefix + child.name, ast.get_docstring(child) or class_doc))
                visit(child, f"{prefix}{child.name}.", None)

    visit(tree, "", None)
    return found


def solution_regions(path: Path) -> list[Region]:
    """The solution regions of one Python file, in order. Raises ValueError on an unpaired or
    nested marker, or on a region outside a function (its stub would break the import)."""
    path = Path(path)
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    spans, start = [], None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if start is not None:
                raise ValueError(f"{path}:{i + 1}: {BEGIN} inside the region opened at line {start + 1}")
            start = i
        elif stripped.startswith(END):
            if start is None:
                raise ValueError(f"{path}:{i + 1}: {END} without a {BEGIN}")
            spans.append((start, i))
            start = None
    if start is not None:
        raise ValueError(f"{path}:{start + 1}: {BEGIN} without an {END}")
    if not spans:
        return []
    defs = _enclosing_defs(source_rule.parse(text, str(path)))  # graded in threads: one parse at a time
    regions = []
    for s, e in spans:
        inside = [(node, q, doc) for node, q, doc in defs if node.lineno < s + 1 < node.end_lineno]
        if not inside:
            raise ValueError(f"{path}:{s + 1}: solution region outside any function")
        node, qualname, doc = max(inside, key=lambda d: d[0].lineno)  # the innermost def
        if node.col_offset == 0 and "." not in qualname:
            qualname = f"{path.stem}.{qualname}"
        marker = lines[s].strip()
        component = _component(qualname, path)
        if marker.startswith(BEGIN + ":"):
            message = marker[len(BEGIN) + 1 :].strip()
        else:
            summary = _summary(doc).rstrip(".:,; ")
            where = f"the {component} section of README.md" if component else "README.md"
            message = f"Implement {qualname}" + (f": {summary}" if summary else "") + f"; see {where}"
        indent = lines[s][: len(lines[s]) - len(lines[s].lstrip())]
        regions.append(Region(path, s, e, indent, qualname, component, message, lines[s : e + 1]))
    return regions


def _python_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / PACKAGE).rglob("*.py") if not NEVER_SHIPPED & set(p.relative_to(root).parts))


def all_solution_regions(reference_dir: Path = REPO) -> dict[str, list[Region]]:
    """Regions of every shipped file of the package, keyed by path relative to reference_dir."""
    reference_dir = Path(reference_dir)
    table = {p.relative_to(reference_dir).as_posix(): solution_regions(p) for p in _python_files(reference_dir)}
    return {k: v for k, v in table.items() if v}


def stub_text(path: Path) -> str:
    """The file's text with each solution region replaced by its stub line."""
    lines = Path(path).read_text().splitlines(keepends=True)
    for r in reversed(solution_regions(path)):
        lines[r.start : r.end + 1] = [r.stub]
    return "".join(lines)


def restore_solutions(
    handout_dir: Path, reference_dir: Path = REPO, select: Callable[[Region], bool] | None = None
) -> list[Region]:
    """Put the reference's solution regions back into a handout, in place, and return them.

    Each region's stub line (found in order, so an untouched handout or one whose other
    parts were edited both work) is replaced by the region's original lines, markers
    included: restoring every region makes the package identical to the reference's.
    `select` picks regions, e.g. `lambda r: r.component == "swiglu"` for a partial submission.
    Raises ValueError if a selected region's stub is no longer in the handout.
    """
    handout_dir, restored = Path(handout_dir), []
    for rel, regions in all_solution_regions(reference_dir).items():
        chosen = [r for r in regions if select is None or select(r)]
        if not chosen:
            continue
        target = handout_dir / rel
        lines = target.read_text().splitlines(keepends=True)
        out, i = [], 0
        for r in chosen:
            try:
                j = lines.index(r.stub, i)
            except ValueError:
                raise ValueError(f"{target}: no stub for {r.qualname} (looked for {r.stub.strip()!r})") from None
            out += lines[i:j] + r.lines
            i = j + 1
        target.write_text("".join(out + lines[i:]))
        restored += chosen
    return restored


def shipped_files(reference_dir: Path = REPO) -> list[Path]:
    """The files copied as they are or stubbed, relative to reference_dir (not README, pyproject, lock)."""
    reference_dir, files = Path(reference_dir), []
    for top in (PACKAGE, "tests", "fixtures"):
        for p in sorted((reference_dir / top).rglob("*")):
            rel = p.relative_to(reference_dir)
            if not p.is_file() or NEVER_SHIPPED & set(rel.parts) or p.suffix == ".pyc":
                continue
            files.append(rel)
    return files + [Path(".gitignore")]


def _imported_modules(paths: list[Path]) -> set[str]:
    names = set()
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def _req_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0].lower().replace("-", "_")


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        inline = "[" + ", ".join(_toml_value(x) for x in v) + "]"
        if len(inline) <= 60:
            return inline
        return "[\n" + "".join(f"    {_toml_value(x)},\n" for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _toml_tables(table: dict, prefix: str = "") -> str:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    out = f"[{prefix}]\n" if prefix and (scalars or not tables) else ""
    out += "".join(
        f"{k if re.fullmatch(r'[A-Za-z0-9_-]+', k) else json.dumps(k)} = {_toml_value(v)}\n" for k, v in scalars.items()
    )
    for k, v in tables.items():
        out += ("\n" if out else "") + _toml_tables(v, f"{prefix}.{k}" if prefix else k)
    return out


def student_pyproject(reference_dir: Path = REPO, shipped_tests: list[Path] | None = None) -> str:
    """The staff pyproject.toml with the same dependencies, the `dev` group cut to what the
    shipped tests import (plus pytest), no other groups, pytest's addopts without
    STAFF_ONLY_ADDOPTS, uv's settings without compile-bytecode, and a student description."""
    reference_dir = Path(reference_dir)
    data = tomllib.loads((reference_dir / "pyproject.toml").read_text())
    if shipped_tests is None:
        shipped_tests = [
            reference_dir / p for p in shipped_files(reference_dir) if p.parts[0] == "tests" and p.suffix == ".py"
        ]
    used = (_imported_modules(shipped_tests) | ALWAYS_DEV) - STAFF_ONLY_DEV
    dev = [r for r in data.get("dependency-groups", {}).get("dev", []) if isinstance(r, str) and _req_name(r) in used]
    data["dependency-groups"] = {"dev": dev}
    data.get("tool", {}).pop("ruff", None)  # the staff's lint config (ruff is not in the student's dev group)
    # With it, every `uv run` checks and compiles the whole environment again: a few tenths of a CPU
    # second on each `uv run pytest`. Python writes its own .pyc; where PYTHONDONTWRITEBYTECODE is
    # set, the README has students run `uv sync --compile-bytecode` once.
    data.get("tool", {}).get("uv", {}).pop("compile-bytecode", None)
    data["project"]["scripts"] = {"cs336": "cs336_basics.cli:main"}  # the staff's entry point adds staff commands
    pytest_options = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
    if "testpaths" in pytest_options:  # only folders the handout has
        shipped_tops = {p.relative_to(reference_dir).parts[0] for p in shipped_tests}
        pytest_options["testpaths"] = [t for t in pytest_options["testpaths"] if Path(t).parts[0] in shipped_tops]
    if "addopts" in pytest_options:
        kept = [o for o in pytest_options["addopts"].split() if not o.startswith(STAFF_ONLY_ADDOPTS)]
        pytest_options["addopts"] = " ".join(kept)
        if not kept:
            del pytest_options["addopts"]
    data["project"]["description"] = (
        "Assignment: a transformer language model built from scratch in PyTorch, with its tests and fixtures "
        "(CS336 assignment 1 style)."
    )
    header = "# Derived from the course staff's pyproject.toml by `cs336 handout`: same dependencies.\n\n"
    return header + _toml_tables(data)


def uv_lock(project_dir: Path) -> tuple[float, str]:
    """Run `uv lock` in project_dir, offline first (from uv's cache), online if that fails.
    Returns (seconds, how: "offline" or "online")."""
    t0 = time.perf_counter()
    for how, flags in (("offline", ["--offline"]), ("online", [])):
        done = subprocess.run(["uv", "lock", *flags], cwd=project_dir, capture_output=True, text=True)
        if done.returncode == 0:
            return time.perf_counter() - t0, how
    raise RuntimeError(f"`uv lock` failed in {project_dir}:\n{done.stderr}")


def build_handout(out_dir: Path, reference_dir: Path = REPO, lock: bool = True) -> Path:
    """Write the student repository to out_dir (which must not exist or be empty) and return it.

    Solution regions in cs336_basics/ become stubs; the staff uv.lock is copied and then
    re-locked with `uv lock` against the derived pyproject.toml, so versions stay the staff's
    (the fixtures' tolerances were measured with them) and only staff-only packages drop out.
    lock=False skips `uv lock` (the copied lock then still lists the staff-only dev deps).
    """
    out_dir, reference_dir = Path(out_dir), Path(reference_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"out_dir must be empty or absent, got {out_dir} with files in it")
    files = shipped_files(reference_dir)
    for rel in files:
        src, dst = reference_dir / rel, out_dir / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel.parts[0] == PACKAGE and rel.suffix == ".py":
            dst.write_text(stub_text(src))
        else:
            shutil.copyfile(src, dst)
    write_given(out_dir / PACKAGE, reference_dir / PACKAGE)
    shutil.copyfile(reference_dir / "handout" / "README.md", out_dir / "README.md")
    tests = [reference_dir / p for p in files if p.parts[0] == "tests" and p.suffix == ".py"]
    (out_dir / "pyproject.toml").write_text(student_pyproject(reference_dir, tests))
    shutil.copyfile(reference_dir / "uv.lock", out_dir / "uv.lock")
    if lock:
        uv_lock(out_dir)
    return out_dir


def write_given(package_out: Path, package_dir: Path) -> None:
    """The handout's source_rule manifest: the files it gives whole, and its own lines the rule
    would name in the files students fill in (cs336_basics/source_rule.py, Given)."""
    from cs336_basics import source_rule

    given = source_rule.given_by(package_dir)
    text = json.dumps({"files": given.files, "lines": given.lines}, indent=1, sort_keys=True)
    (package_out / source_rule.GIVEN_MANIFEST).write_text(text + "\n")


def _run(args) -> int:
    t0 = time.perf_counter()
    out = build_handout(Path(args.out_dir), lock=not args.no_lock)
    regions = sum(len(r) for r in all_solution_regions().values())
    print(f"wrote {out} ({regions} solution regions stubbed) in {time.perf_counter() - t0:.1f} s")
    return 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import empty_or_absent_dir

    p = commands.add_parser("handout", help="(staff) write the student repository, solutions stubbed, to OUT_DIR")
    p.add_argument("out_dir", metavar="OUT_DIR", type=empty_or_absent_dir, help="an empty or absent directory")
    p.add_argument("--no-lock", action="store_true", help="copy the staff uv.lock instead of running `uv lock`")
    p.set_defaults(run=_run)
