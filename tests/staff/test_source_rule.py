"""The source rule (cs336_basics/source_rule.py) by its principle: names no list holds are judged
by where they lead (an elementary operation or tool, or not), the routes that could switch the
recorder off are closed whatever they are spelled with, and honest code keeps its idioms."""

import textwrap

import pytest

from cs336_basics import source_rule
from cs336_basics.source_rule import Violation, check_source, costs


def violations(body: str) -> list[str]:
    return [v.what for v in check_source(textwrap.dedent(body), "cs336_basics/x.py")]


# library functions that compute a component or a layer; none is named in any list of the rule
NOT_ELEMENTARY = [
    "torch.nn.functional.softplus(x)",
    "torch.nn.functional.hardswish(x)",
    "torch.special.entr(x)",
    "torch.cdist(x, x)",
    "torch.logcumsumexp(x, 0)",
    "torch.sparse.softmax(x, 0)",
    "torch.masked.softmax(x, 0)",
    "torch.nn.functional.normalize(x)",
    "torch.nn.functional.group_norm(x, 1)",
    "torch.nn.functional.cosine_similarity(x, x)",
    "torch.nn.Bilinear(2, 2, 2)",
    "torch.nn.GELU()(x)",
    "torch.func.vmap(f)(x)",
    "torch.compile(f)(x)",
    "torch.ops.aten.exp(x)",
    "torch.library.Library('a', 'DEF')",
    "torch.optim.lr_scheduler.LambdaLR",
    "torch.utils.checkpoint.checkpoint(f, x)",
]


@pytest.mark.parametrize("call", NOT_ELEMENTARY)
def test_a_library_function_that_is_not_an_elementary_operation_is_a_violation(call):
    found = violations(f"import torch\n\ndef f(x):\n    return {call}\n")
    assert any(w.startswith("names torch.") for w in found), found


ELEMENTARY = [
    "torch.exp(x) + torch.where(x > 0, x, -x).sum(-1, keepdim=True)",
    "torch.einsum('ij,jk->ik', x, x) @ x.T",
    "torch.special.expit(x) * torch.special.erfc(x)",
    "torch.linalg.vector_norm(x) + torch.rsqrt(x).amax()",
    "torch._foreach_mul_([x], 2.0)",
    "torch.nn.init.trunc_normal_(x, 0, 1, -3, 3)",
    "torch.nn.functional.pad(x, (1, 1))",
    "torch.nn.Parameter(torch.empty(2, dtype=torch.float32))",
    "torch.is_complex(x) or torch.is_floating_point(x)",
    "torch.view_as_complex(x) * torch.polar(x, x)",
    "torch.multinomial(x, 1, generator=torch.Generator())",
]


@pytest.mark.parametrize("expr", ELEMENTARY)
def test_an_elementary_operation_or_tool_is_allowed(expr):
    assert violations(f"import torch\n\ndef f(x):\n    return {expr}\n") == []


HONEST = """
    import collections
    import dataclasses
    import functools
    import heapq
    import itertools
    import math

    import einops
    import numpy as np
    import regex
    import torch
    from jaxtyping import Float
    from torch import Tensor

    from cs336_basics.nn import functional as F


    @dataclasses.dataclass
    class State:
        step: int = 0


    class Cache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self._tables = {}

        def _apply(self, fn, recurse=True):
            super()._apply(fn, recurse)
            return self

        @functools.lru_cache(maxsize=8)
        def table(self, n: int) -> Float[Tensor, " n"]:
            if not hasattr(self, "_tables"):
                return torch.arange(n)
            return getattr(self, "_tables").get(n, torch.zeros(n))

        def fields(self, names):
            return [getattr(self, name) for name in names]


    def count(words):
        pairs = collections.Counter(itertools.pairwise(words))
        heap = [(-n, p) for p, n in pairs.items()]
        heapq.heapify(heap)
        return heap, math.sqrt(len(words)), regex.compile(r"\\p{L}+")


    def rows(x, tokens_path):
        tokens = np.memmap(tokens_path, dtype=np.uint16, mode="r")
        return einops.rearrange(x, "b t d -> (b t) d"), F.softmax(x, -1), tokens
"""


def test_honest_idioms_are_not_violations():
    assert violations(HONEST) == []


# ways to reach what the recorder watches (torch._C, the profile hook, frames, the module table)
TAMPERING = [
    ("import sys\n", "imports sys"),
    ("import gc\n", "imports gc"),
    ("import importlib\n", "imports importlib"),
    ("from torch import _C\n", "names torch._C"),
    ("import torch\nC = getattr(torch, '_C')\n", "getattr on torch"),
    ("import torch\nC = getattr(torch, '_' + 'C')\n", "getattr with a name computed"),
    ("import operator\nimport torch\nC = operator.attrgetter('_C')(torch)\n", "names operator.attrgetter"),
    ("import torch\nt = torch\n", "torch used as a value"),
    ("import torch\nf = (lambda: 0).__code__\n", ".__code__"),
    ("def f(g):\n    return g.__globals__['torch']\n", ".__globals__"),
    ("def f():\n    yield\n\nframe = f().gi_frame.f_back\n", ".gi_frame"),
    ("x = __builtins__['eval']\n", "__builtins__"),
    ("import torch\nnames = vars(torch)\n", "vars"),
    ("exec('1')\n", "exec"),
    ("run = eval\n", "eval"),
    ("class T:\n    def __torch_function__(self, *a):\n        pass\n", "defines __torch_function__"),
    ("import torch\ntorch.softmax = None\n", "changes torch.softmax"),
    ("from torch.nn.functional import *\n", "imports *"),
    ("import torch\nx = torch.ones(1)._version\n", "private attribute"),
    ("import threading\n", "imports threading"),
]


@pytest.mark.parametrize("source, expected", TAMPERING, ids=[t[1] for t in TAMPERING])
def test_a_route_to_the_recorder_is_a_violation(source, expected):
    found = violations(source)
    assert any(expected in w for w in found), found


def test_naming_a_forbidden_function_costs_only_the_components_that_ran_its_def():
    source = "import torch\n\n\ndef silu(x):\n    return torch.nn.functional.silu(x)\n\n\ndef gelu(x):\n    return x\n"
    (violation,) = check_source(source, "cs336_basics/nn/functional.py")
    assert violation.unit == (4, 5)
    assert costs(violation, {("cs336_basics/nn/functional.py", 4)})
    assert not costs(violation, {("cs336_basics/nn/functional.py", 8)})


def test_a_violation_that_could_hide_what_ran_costs_every_component():
    source = "def silu(x):\n    import gc\n    return x\n"
    (violation,) = check_source(source, "cs336_basics/nn/functional.py")
    assert costs(violation, {("cs336_basics/data.py", 10)})


def test_the_message_names_the_line_and_what_to_write_instead():
    text = source_rule.explain([Violation("cs336_basics/a.py", 3, "imports sys: not allowed", "import sys", None)])
    assert "cs336_basics/a.py:3" in text and "import sys" in text and "The one rule" in text


def test_the_reference_package_breaks_no_rule():
    from cs336_basics import REPO

    assert source_rule.check_package(REPO / "cs336_basics") == []


def test_a_lazy_torch_module_named_in_the_source_is_not_imported_by_the_check():
    import subprocess
    import sys

    probe = (
        "import sys; from cs336_basics import source_rule as r; "
        "found = r.check_source('import torch\\nx = torch._dynamo\\ny = torch.onnx\\n', 'a.py'); "
        "print(len(found), 'torch._dynamo' in sys.modules, 'torch.onnx' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "False", "False"]


def _package(root, given_manifest: bool):
    (root / "cs336_basics" / "staff").mkdir(parents=True)
    (root / "cs336_basics" / "staff" / "fast.py").write_text("import tokenizers\n")
    if given_manifest:
        (root / "cs336_basics" / source_rule.GIVEN_MANIFEST).write_text('{"files": {}, "lines": {}}')
    return root / "cs336_basics"


def test_a_submission_s_staff_folder_is_checked_like_any_other(tmp_path):
    package = _package(tmp_path, given_manifest=True)
    assert [v.path for v in source_rule.check_package(package)] == ["cs336_basics/staff/fast.py"]
    assert [v.path for v in source_rule.check_package(package, source_rule.Given({}, {}))] == [
        "cs336_basics/staff/fast.py"
    ]


def test_only_the_staff_repository_s_package_keeps_its_staff_folder_out(tmp_path):
    assert source_rule.check_package(_package(tmp_path, given_manifest=False)) == []
