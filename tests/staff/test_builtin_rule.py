"""The public snapshot tests apply the grader's rule (cs336_basics/builtin_guard.py): a component
that calls the PyTorch built-in computing it fails its snapshot test, with a message naming it."""

import os
import subprocess
import sys

from cs336_basics import REPO

USES_BUILTIN = """
def pytest_sessionstart(session):  # after jaxtyping's import hook is in place
    import torch.nn.functional as TF
    from cs336_basics.nn import functional as F

    F.silu = lambda x: TF.silu(x)  # right values, from the built-in
"""


def test_public_snapshot_test_fails_a_component_that_calls_its_builtin(tmp_path):
    (tmp_path / "uses_builtin.py").write_text(USES_BUILTIN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "uses_builtin",
            "tests/test_silu.py",
            "-k",
            "matches_fixture",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "silu called F.silu, aten.silu: the PyTorch built-in that computes this component" in done.stdout
    summary = done.stdout.splitlines()[-1]
    assert "failed" in summary and "error" not in summary, summary  # a failure of the test, not a teardown error
    assert "mismatch" not in done.stdout and "off by more than" not in done.stdout  # the values are right


# The training components' built-ins, each swapped in where the adapters look (tests/oracles.py):
# the grader's recorder (ATen operators included) sees each one on the component's first public case.
def _training_builtin_calls(component: str) -> list[str]:
    import torch

    from cs336_basics.builtin_guard import CallRecorder, forbidden_calls
    from cs336_basics.fixture_io import fixture_names, load_fixture
    from tests import adapters
    from tests.oracles import builtin_kernels

    fx = load_fixture(fixture_names(component)[0])
    with builtin_kernels(), torch.no_grad(), CallRecorder() as recorder:
        getattr(adapters, fx.adapter)(**fx.kwargs)
    return forbidden_calls(component, recorder.calls)


def test_grader_rule_sees_f_cross_entropy():
    assert "F.cross_entropy" in _training_builtin_calls("cross_entropy")


def test_is_complex_and_foreach_operators_cost_an_honest_adamw_nothing():
    from cs336_basics.builtin_guard import forbidden_calls

    honest = {"torch.is_complex", "torch._foreach_lerp_", "aten._foreach_lerp_", "aten._foreach_sqrt", "aten.lerp_"}
    assert forbidden_calls("adamw", honest) == []
    assert (
        forbidden_calls("gradient_clipping", {"torch._foreach_norm", "aten._foreach_norm", "aten._foreach_mul_"}) == []
    )


def test_fused_adamw_kernel_is_not_elementary():
    from cs336_basics.builtin_guard import forbidden_calls

    assert forbidden_calls("adamw", {"aten._fused_adamw_"}) == ["aten._fused_adamw_"]


def test_autograd_s_derivative_of_an_elementary_operator_is_elementary():
    from cs336_basics.elementary_ops import elementary

    assert elementary("aten.sigmoid_backward") and elementary("aten.tanh_backward")


def test_autograd_s_derivative_of_a_forbidden_operator_is_forbidden():
    from cs336_basics.elementary_ops import elementary

    assert not elementary("aten.silu_backward") and not elementary("aten._softmax_backward_data")
    assert not elementary("aten.native_layer_norm_backward")


def test_public_snapshot_tests_name_each_library_route_of_the_hostile_sample(tmp_path):
    """tests/staff/hostile/library_routes at home: each component's snapshot tests fail, naming
    the library call and the line of the package that made it, as the grade does."""
    import shutil

    from tests.staff._hostile import apply, sample_files
    from tests.staff.test_hostile import readme_field

    ignore = shutil.ignore_patterns("staff", "__pycache__")
    for name in ("cs336_basics", "tests"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=ignore)
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    for sample in sample_files("library_routes"):
        apply(sample, tmp_path)
    components = readme_field("library_routes", "component").split()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "matches_fixture"]
        + [f"tests/test_{c}.py" for c in components],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
        capture_output=True,
        text=True,
    )
    assert " passed" not in done.stdout.splitlines()[-1], done.stdout[-3000:]
    for component in components:
        assert f"{component} called library code" in done.stdout, component
    for callee in readme_field("library_routes", "named").split():
        assert f"{callee}" in done.stdout and "at cs336_basics/" in done.stdout, callee


class _Impostor:
    """A callable that claims to equal every function and hashes as F.silu does."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        import torch

        return hash(torch.nn.functional.silu)

    def __call__(self, x):
        return x


def test_recorder_names_a_builtin_called_after_a_callable_that_claims_to_be_it():
    import torch

    from cs336_basics.builtin_guard import CallRecorder

    x = torch.randn(3)
    with CallRecorder(dispatch=False) as recorder:
        torch.overrides.handle_torch_function(_Impostor(), (x,), x)  # through the recorder's mode
        torch.nn.functional.silu(x)
    assert "F.silu" in recorder.calls
