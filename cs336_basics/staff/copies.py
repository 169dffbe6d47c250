"""Submissions made from the reference, to test and measure the similarity report (similarity.py):
copies of the reference's solution regions, exact or disguised (locals renamed, functions in
another order, comments and blank lines added), and independent solutions of the same kernels
(the mistake catalogue's accepted variants and alternatives).

    handout_package(dest)                       -> dest/cs336_basics, the handout's package (regions stubbed)
    fill(dest, bodies)                          -> each named region's stub replaced by its body
    reference_bodies(qualnames)                 -> the reference's regions, markers dropped
    renamed(body), commented(body), reordered(text) -> the disguises
    variant_bodies(), alternative_bodies()      -> independent bodies of INDEPENDENT_KERNELS
    cohort(dest, n, seed)                       -> n submissions mixing all of these
"""

import ast
import inspect
import random
import re
import shutil
import textwrap
import zipfile
from pathlib import Path

from cs336_basics import REPO
from cs336_basics.staff.grader.similarity import given_code
from cs336_basics.staff.handout import BEGIN, END, all_solution_regions

# functional.py's kernels with an accepted variant and an alternative in the mistake catalogue
# (cs336_basics/staff/cases/<area>.py)
INDEPENDENT_KERNELS = (
    "linear",
    "silu",
    "softmax",
    "rmsnorm",
    "layernorm",
    "swiglu_ffn",
    "scaled_dot_product_attention",
    "rope",
    "grouped_query_attention",
)


def handout_package(dest: Path) -> Path:
    """Write the handout's package (every shipped .py file, solution regions stubbed) under dest."""
    dest = Path(dest)
    for rel, text in given_code().items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    return dest / "cs336_basics"


def _regions() -> dict[str, object]:
    return {r.qualname: r for regions in all_solution_regions(REPO).values() for r in regions}


def fill(dest: Path, bodies: dict[str, str]) -> None:
    """Replace the stub of each region named in bodies (qualname -> code, any indentation) with the
    body, indented as the stub was."""
    regions = _regions()
    for qualname, body in bodies.items():
        region = regions[qualname]
        target = Path(dest) / region.path.relative_to(REPO)
        text = target.read_text()
        if region.stub not in text:
            raise ValueError(f"{target}: no stub for {qualname} (looked for {region.stub.strip()!r})")
        code = textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", region.indent)
        target.write_text(text.replace(region.stub, code, 1))


def reference_bodies(qualnames=None) -> dict[str, str]:
    """The reference's solution regions (all, or those named), without their marker lines."""
    regions = _regions()
    chosen = regions if qualnames is None else {q: regions[q] for q in qualnames}
    return {
        q: "".join(line for line in r.lines if not line.strip().startswith((BEGIN, END))) for q, r in chosen.items()
    }


def renamed(body: str, prefix: str = "my_") -> str:
    """body with every name it assigns (locals, loop and comprehension targets) given a prefix."""
    tree = ast.parse("def _():\n" + textwrap.indent(textwrap.dedent(body), "    "))
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for name in sorted(stored, key=len, reverse=True):
        body = re.sub(rf"(?<![\w.]){re.escape(name)}\b", prefix + name, body)
    return body


def commented(body: str) -> str:
    """body with a comment above every line and a blank line after every second one."""
    out = []
    for i, line in enumerate(textwrap.dedent(body).splitlines()):
        indent = line[: len(line) - len(line.lstrip())]
        out += [f"{indent}# step {i + 1}: as the handout asks", line] + ([""] if i % 2 else [])
    return "\n".join(out) + "\n"


def reordered(text: str) -> str:
    """A module's text with its top-level functions and classes in reverse order (what precedes the
    first one stays first; statements between them move with the one above)."""
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    starts = [
        min([n.lineno, *(d.lineno for d in n.decorator_list)]) - 1
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    if len(starts) < 2:
        return text
    chunks = ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    chunks = [c if c.endswith("\n\n") else c + "\n" for c in chunks]
    return "".join(lines[: starts[0]]) + "".join(reversed(chunks))


def _function_body(function) -> str:
    """A function's body as source (its docstring, if any, dropped)."""
    source = textwrap.dedent(inspect.getsource(function))
    node = ast.parse(source).body[0]
    first = node.body[1] if ast.get_docstring(node) and len(node.body) > 1 else node.body[0]
    return "".join(source.splitlines(keepends=True)[first.lineno - 1 : node.end_lineno])


def variant_bodies() -> dict[str, str]:
    """The mistake catalogue's accepted variants of INDEPENDENT_KERNELS, as bodies of those regions."""
    from cs336_basics.nn import functional
    from cs336_basics.staff.cases import VARIANTS

    found = {
        f"functional.{v.attribute}": _function_body(v.replacement)
        for v in VARIANTS
        if v.owner is functional and v.attribute in INDEPENDENT_KERNELS
    }
    missing = {f"functional.{k}" for k in INDEPENDENT_KERNELS} - set(found)
    if missing:
        raise LookupError(f"no accepted variant for {sorted(missing)} in cs336_basics/staff/cases/<area>.py")
    return found


def alternative_bodies() -> dict[str, str]:
    """The mistake catalogue's alternatives of INDEPENDENT_KERNELS (written the way another student
    might: loops and explicit broadcasting where the reference and the variants use library calls),
    as bodies of those regions."""
    from cs336_basics.staff.cases import ALTERNATIVES

    found = {f"functional.{a.kernel}": textwrap.dedent(a.body) for a in ALTERNATIVES if a.kernel in INDEPENDENT_KERNELS}
    missing = {f"functional.{k}" for k in INDEPENDENT_KERNELS} - set(found)
    if missing:
        raise LookupError(f"no alternative for {sorted(missing)} in cs336_basics/staff/cases/<area>.py")
    return found


def cohort(dest: Path, n: int, seed: int = 0) -> list[Path]:
    """n submissions dest/student_000, ... filled by chance from the reference: each region left
    stubbed (1 in 10), else one of INDEPENDENT_KERNELS' independent bodies (2 in 5 of those), else the
    reference's, renamed (1 in 2) and commented (1 in 3); functional.py reordered in 1 of 4; 1 in 4 zipped."""
    rng = random.Random(seed)
    reference, independent = reference_bodies(), [variant_bodies(), alternative_bodies()]
    made = []
    for i in range(n):
        bodies = {}
        for qualname, body in reference.items():
            luck = rng.random()
            if luck < 0.1:
                continue
            if qualname in independent[0] and luck < 0.5:
                bodies[qualname] = rng.choice(independent)[qualname]
                continue
            body = renamed(body, f"s{i}_") if rng.random() < 0.5 else body
            bodies[qualname] = commented(body) if rng.random() < 1 / 3 else body
        root = Path(dest) / f"student_{i:03d}"
        package = handout_package(root)
        fill(root, bodies)
        if rng.random() < 0.25:
            functional = package / "nn" / "functional.py"
            functional.write_text(reordered(functional.read_text()))
        made.append(_zipped(root) if rng.random() < 0.25 else root)
    return made


def _zipped(root: Path) -> Path:
    """root as root.zip (its files under root's name), root removed."""
    archive = root.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            z.write(path, path.relative_to(root.parent))
    shutil.rmtree(root)
    return archive


COPIES = ("exact_copy", "renamed", "reordered", "renamed_reordered", "commented")  # of "reference"
INDEPENDENT = ("variants", "alternatives")
UNTOUCHED = ("handout_a", "handout_b")


def small_set(dest: Path) -> dict[str, Path]:
    """Submissions of INDEPENDENT_KERNELS (every other region stubbed), name -> package: the
    reference's bodies ("reference"), COPIES of them, INDEPENDENT solutions and UNTOUCHED handouts."""
    reference = reference_bodies([f"functional.{k}" for k in INDEPENDENT_KERNELS])
    bodies = {
        "reference": reference,
        "exact_copy": reference,
        "renamed": {q: renamed(b) for q, b in reference.items()},
        "reordered": reference,
        "renamed_reordered": {q: renamed(b) for q, b in reference.items()},
        "commented": {q: commented(b) for q, b in reference.items()},
        "variants": variant_bodies(),
        "alternatives": alternative_bodies(),
        **{name: {} for name in UNTOUCHED},
    }
    made = {}
    for name, chosen in bodies.items():
        made[name] = handout_package(Path(dest) / name)
        fill(Path(dest) / name, chosen)
        if "reordered" in name:
            functional = made[name] / "nn" / "functional.py"
            functional.write_text(reordered(functional.read_text()))
    return made
