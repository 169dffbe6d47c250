"""The call rule (cs336_basics/call_rule.py) on routes no list names: a made-up package on
sys.path, calls through functools.partial, a lambda and map, a helper module of the student's
package, code built at run time in it, a subclass of a torch optimizer, a finalizer of its own;
and the calls correct code makes (Module, Parameter, torch.nn.init, einops, regex, np.memmap,
collections, heapq, the Optimizer base class) or a garbage collection makes in it (a library's
abandoned generator closed), which it leaves alone."""

import gc
import importlib
import sys
import textwrap

import pytest
import torch

from cs336_basics import call_rule
from cs336_basics.builtin_guard import CallRecorder, RecordingTampered, explain, forbidden_calls
from cs336_basics.staff.grader.static_check import findings_of

MADE_UP_LIBRARY = """
CLOSED = []


def numbers():
    try:
        yield 1
        yield 2
    finally:
        CLOSED.append("closed")


class Holder:  # a cycle: only the garbage collector frees it, and closes its generator then
    def __init__(self):
        self.me, self.gen = self, numbers()
        next(self.gen)


def clip_norm(grads, max_norm, eps=1e-6):
    norm = sum(float((g * g).sum()) for g in grads) ** 0.5
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + eps))
    return norm
"""

STUDENT = {
    "__init__.py": "",
    "helper.py": """
        import torch

        def clip(holders, max_norm):
            return torch.nn.utils.clip_grad_norm_(holders, max_norm, foreach=False)
    """,
    "routes.py": """
        import functools
        import gc

        import einops
        import numpy as np
        import regex
        import torch
        from collections import Counter
        import heapq

        import made_up_clipping
        from student_pkg import helper

        def through_made_up_library(grads):
            return made_up_clipping.clip_norm(grads, 1.0)

        def through_partial(params):
            return functools.partial(torch.nn.utils.clip_grad_norm_, foreach=False)(params, 1.0)

        def through_lambda_and_map(params):
            clip = lambda p: torch.nn.utils.clip_grad_norm_([p], 1.0, foreach=False)
            return list(map(clip, params))

        def through_helper_module(params):
            return helper.clip(params, 1.0)

        def through_run_time_code(params):
            namespace = {"torch": torch, "params": params, "__name__": __name__}
            exec(compile("out = torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=False)", "<made>", "exec"), namespace)
            return namespace["out"]

        class SubclassedAdamW(torch.optim.AdamW):
            def step(self, closure=None):
                return super().step(closure)

        def through_super_step(params):
            OPTIMIZER[0].step()

        OPTIMIZER = []

        def allocates_while_a_library_generator_is_collected(holders):
            holders.clear()  # a library's generator, abandoned half-run in a cycle: collected below
            return [list(range(3)) for _ in range(50_000)]

        class CallsALibraryWhenCollected:
            def __init__(self):
                self.me = self

            def __del__(self):
                made_up_clipping.clip_norm([torch.ones(3)], 1.0)

        def calls_a_library_from_its_own_finalizer():
            CallsALibraryWhenCollected()
            gc.collect()

        def calls_the_collection_callback_by_hand():
            for callback in list(gc.callbacks):
                callback("start", {})
            return made_up_clipping.clip_norm([torch.ones(3)], 1.0)

        def numpy_random(n):
            return np.random.default_rng(0).integers(0, n, 4)

        class Scale(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.empty(3))
                torch.nn.init.trunc_normal_(self.weight, std=0.02, a=-0.06, b=0.06)
                self.layers = torch.nn.ModuleList([])

            def forward(self, x):
                return x * self.weight

        class PlainAdam(torch.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=0.1))

            @torch.no_grad()
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        state["m"] = state.get("m", torch.zeros_like(p)) * 0.9 + p.grad
                        p.sub_(group["lr"] * state["m"])

        class Double(torch.autograd.Function):  # as the tensor-parallel comm operators are written
            @staticmethod
            def forward(ctx, x):
                return 2 * x

            @staticmethod
            def backward(ctx, g):
                return 2 * g

        def correct_code(path):
            x = Scale()(Double.apply(torch.ones(3)))
            y = einops.rearrange(torch.arange(6.0), "(a b) -> b a", a=2)
            words = Counter(m.group() for m in regex.finditer(r"\\p{L}+", "a bb a"))
            heap = []
            heapq.heappush(heap, (1, "a"))
            tokens = np.memmap(path, dtype=np.uint16, mode="r")
            window = torch.from_numpy(np.asarray(tokens[np.arange(3)], dtype=np.int64))
            p = torch.nn.Parameter(torch.ones(2))
            p.grad = torch.ones(2)
            PlainAdam([p]).step()
            return x, y, words, window
    """,
}


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    """A made-up library on sys.path and a student package, `student_pkg`, that calls it."""
    root = tmp_path_factory.mktemp("call_rule")
    (root / "made_up_clipping.py").write_text(MADE_UP_LIBRARY)
    package = root / "student_pkg"
    package.mkdir()
    for name, text in STUDENT.items():
        (package / name).write_text(textwrap.dedent(text))
    sys.path.insert(0, str(root))
    try:
        routes = importlib.import_module("student_pkg.routes")
        yield routes, str(package)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m.split(".")[0] in ("student_pkg", "made_up_clipping")]:
            del sys.modules[name]


def params():
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.full((4,), 3.0)
    return [p]


def forbidden(student, route, *args, component="gradient_clipping") -> list[str]:
    routes, package = student
    with CallRecorder(dispatch=False, package_dir=package) as recorder:
        getattr(routes, route)(*args)
    return forbidden_calls(component, recorder.calls)


def test_call_rule_fails_a_made_up_library_on_sys_path(student):
    found = forbidden(student, "through_made_up_library", [torch.ones(3)])
    assert found and found[0].startswith("made_up_clipping.clip_norm at student_pkg/routes.py:"), found


@pytest.mark.parametrize("route", ["through_partial", "through_lambda_and_map", "through_run_time_code"])
def test_call_rule_sees_clip_grad_norm_through_partial_lambda_and_run_time_code(student, route):
    found = forbidden(student, route, params())
    assert any(f.startswith("torch.nn.utils.clip_grad.clip_grad_norm_ at ") for f in found), found


def test_call_rule_names_the_helper_module_line_that_called_the_library(student):
    found = forbidden(student, "through_helper_module", params())
    assert any(f.startswith("torch.nn.utils.clip_grad.clip_grad_norm_ at student_pkg/helper.py:5:") for f in found), (
        found
    )


def test_call_rule_sees_a_torch_optimizer_step_through_super_and_its_decorators(student):
    routes, _ = student
    p = params()
    routes.OPTIMIZER[:] = [routes.SubclassedAdamW(p, foreach=False)]
    found = forbidden(student, "through_super_step", p, component="adamw")
    assert any(f.startswith("torch.optim.adam") and ".step at student_pkg/routes.py:" in f for f in found), found


def test_call_rule_forbids_numpy_random_and_the_static_check_names_it():
    """Cython functions (numpy.random's) make no profile event on Python 3.11: the table forbids
    them and the static check names them for staff review."""
    assert not call_rule.verdict("numpy.random._generator.Generator.integers")
    assert call_rule.verdict("numpy.memmap")
    found = findings_of(
        "import numpy as np\nstarts = np.random.default_rng(0).integers(0, 9, 4)", "cs336_basics/data.py"
    )
    assert [f.line for f in found] == [2] and "numpy.random" in found[0].what, found


def test_call_rule_message_names_the_call_its_line_and_the_rule(student):
    found = forbidden(student, "through_helper_module", params())
    message = explain("gradient_clipping", found)
    assert "torch.nn.utils.clip_grad.clip_grad_norm_ at student_pkg/helper.py:5: return torch.nn.utils" in message
    assert "README.md" in message


def test_call_rule_ignores_a_library_generator_the_garbage_collector_closes_in_the_students_code(student):
    library = sys.modules["made_up_clipping"]
    library.CLOSED.clear()
    # every generation emptied first: the holder stays young (gen0, gen1) until the student's code
    # drops it, whatever the tests before left, so the collections its allocations cause reach it
    gc.collect()
    holders = [library.Holder()]  # made before the component runs, as pytest's -k expression is
    assert forbidden(student, "allocates_while_a_library_generator_is_collected", holders) == []
    assert library.CLOSED == ["closed"]  # the collector closed it while the student's code ran


def test_call_rule_sees_a_library_call_from_the_students_own_finalizer(student):
    found = forbidden(student, "calls_a_library_from_its_own_finalizer")
    assert [f.split(" at ")[0] for f in found] == ["made_up_clipping.clip_norm"], found


def test_call_rule_records_the_collection_callback_called_by_hand(student):
    found = forbidden(student, "calls_the_collection_callback_by_hand")  # then calls the library: failed anyway
    assert any(f.startswith("gc.callbacks at student_pkg/routes.py:") for f in found), found


def test_call_rule_leaves_modules_parameters_init_einops_regex_memmap_and_optimizer_base_alone(student, tmp_path):
    path = tmp_path / "tokens.u16"
    path.write_bytes(bytes(range(16)))
    for component in ("linear", "adamw", "get_batch", "tokenizer", "train_bpe"):
        assert forbidden(student, "correct_code", str(path), component=component) == []


def test_call_rule_allows_torch_save_in_checkpoint_only(student, tmp_path):
    _, package = student
    record = f"torch.serialization.save at {package}/x.py:1"
    assert forbidden_calls("checkpoint", [record]) == []
    assert forbidden_calls("adamw", [record]) == [record]


def test_call_rule_profile_hook_switched_off_is_tampering(student):
    _, package = student
    with pytest.raises(RecordingTampered, match="profile hook"):
        with CallRecorder(dispatch=False, package_dir=package):
            sys.setprofile(None)
