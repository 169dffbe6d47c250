"""Library functions copied into a submission and disguised, to test and measure the vendored-code
check (grader/vendored.py): each sample is the library's own source (inspect.getsource), with its
decorators and docstrings dropped, every name it binds renamed (parameters and locals, the
function itself), annotations dropped from every other sample, and reformatted (ast.unparse, a
comment added above every third line).

    SAMPLES, SHORT_SAMPLES           -> (module, qualname, file of the package to paste it into)
    library_source(module, qualname) -> the library function's source
    disguised(source, seed, annotations, interleave) -> the copy, renamed and reformatted (and
                                        a statement of the copier's own after every interleave-th)
    vendored_package(dest, samples, interleave) -> dest/cs336_basics: the reference, samples appended
"""

import ast
import importlib
import inspect
import random
import shutil
import textwrap
from pathlib import Path

from cs336_basics import REPO

SAMPLES = (
    ("torch.optim.adam", "_single_tensor_adam", "optim/adamw.py"),
    ("torch.nn.utils.clip_grad", "_get_total_norm", "optim/gradient_clipping.py"),
    ("torch.nn.utils.clip_grad", "_clip_grads_with_norm_", "optim/gradient_clipping.py"),
    ("torch.optim.lr_scheduler", "CosineAnnealingLR.get_lr", "optim/lr_schedule.py"),
    ("torch._decomp.decompositions", "_softmax", "nn/functional.py"),
    ("torch._decomp.decompositions", "_log_softmax", "nn/functional.py"),
    ("torch._refs", "_normalize", "nn/functional.py"),
    ("torch._refs", "native_layer_norm", "nn/modules/layernorm.py"),
    ("torch._decomp.decompositions", "_nll_loss_forward", "nn/functional.py"),
    ("torch._refs.nn.functional", "gelu", "nn/functional.py"),
    ("transformers.models.llama.modeling_llama", "eager_attention_forward", "nn/functional.py"),
    ("transformers.models.llama.modeling_llama", "LlamaRMSNorm.forward", "nn/modules/rmsnorm.py"),
    ("transformers.models.llama.modeling_llama", "repeat_kv", "nn/functional.py"),
)
# Too short to tell from honest code (two lines of elementary math, ~25 tokens): never flagged.
SHORT_SAMPLES = (("transformers.models.llama.modeling_llama", "apply_rotary_pos_emb", "nn/modules/rope.py"),)
WORDS = ("alpha", "buf", "tmp", "val", "acc", "item", "res", "cur", "node", "part", "arr", "blk")


def library_source(module: str, qualname: str) -> str:
    """The source of the library function module.qualname, dedented (decorators included)."""
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return textwrap.dedent(inspect.getsource(inspect.unwrap(obj)))


def _bound_names(fn: ast.FunctionDef) -> set[str]:
    """The names fn binds: its parameters and every name it assigns, itself included."""
    names = {fn.name} | {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    return names | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


class _Disguise(ast.NodeTransformer):
    """Renames the bound names, drops docstrings, decorators and (unless kept) annotations."""

    def __init__(self, mapping: dict[str, str], annotations: bool):
        self.mapping, self.annotations = mapping, annotations

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        node.annotation = node.annotation if self.annotations else None
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name, node.decorator_list = self.mapping.get(node.name, node.name), []
        node.returns = node.returns if self.annotations else None
        if ast.get_docstring(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        node = self.generic_visit(node)
        if self.annotations or node.value is None:
            return node
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)


def _interleave(body: list[ast.stmt], every: int) -> list[ast.stmt]:
    """body with a statement of the copier's own (`checked = None`) after every `every`-th one,
    in nested bodies too."""
    out = []
    for i, stmt in enumerate(body):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, field, None), list) and getattr(stmt, field):
                setattr(stmt, field, _interleave(getattr(stmt, field), every))
        out.append(stmt)
        if i % every == every - 1 and not isinstance(stmt, ast.Return | ast.Raise | ast.Continue | ast.Break):
            out.append(ast.parse("checked = None").body[0])
    return out


def disguised(source: str, seed: int = 0, annotations: bool = False, interleave: int = 0) -> str:
    """source (one function) with its bound names renamed, docstrings, decorators and (unless kept)
    annotations dropped, reformatted by ast.unparse, a comment above every third line."""
    tree = ast.parse(textwrap.dedent(source))
    rng = random.Random(seed)
    names = sorted(_bound_names(tree.body[0]) - {"self", "_"})
    mapping = {name: f"{rng.choice(WORDS)}_{i}" for i, name in enumerate(names)}
    tree = _Disguise(mapping, annotations).visit(tree)
    if interleave:
        tree.body[0].body = _interleave(tree.body[0].body, interleave)
    tree = ast.fix_missing_locations(tree)
    lines = ast.unparse(tree).splitlines()
    out = []
    for i, line in enumerate(lines):
        if i % 3 == 1:
            out.append(line[: len(line) - len(line.lstrip())] + "# my own step")
        out.append(line)
    return "\n".join(out) + "\n"


def vendored_package(dest: Path, samples=SAMPLES, interleave: int = 0) -> Path:
    """A copy of the reference package under dest (staff/ left out), each sample, disguised (and
    with a statement of the copier's own after every `interleave`-th one, if given), appended to its
    file; returns dest/cs336_basics."""
    package = Path(dest) / "cs336_basics"
    shutil.copytree(REPO / "cs336_basics", package, ignore=shutil.ignore_patterns("staff", "__pycache__"))
    for i, (module, qualname, rel) in enumerate(samples):
        copy = disguised(library_source(module, qualname), i, annotations=bool(i % 2), interleave=interleave)
        with open(package / rel, "a") as f:
            f.write(f"\n\n{copy}")
    return package
