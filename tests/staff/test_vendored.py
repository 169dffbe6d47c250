"""The vendored-code check (cs336_basics/staff/grader/vendored.py): library functions pasted into the
reference, renamed and reformatted (vendored_samples.py, from the installed libraries' source), are
named with the library function they copy; the reference and short honest code that uses the same
elementary operations are not; code the handout gives is never the student's."""

import textwrap

import pytest

from cs336_basics import REPO
from cs336_basics.staff.grader import vendored as V
from cs336_basics.staff.vendored_samples import SAMPLES, disguised, library_source, vendored_package

# Honest code a student might write from the formulas, with the same elementary operations as the
# libraries' (and, for AdamW.__init__, torch's own words for the argument checks).
HONEST = """
import math
import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return e / e.sum(dim=dim, keepdim=True)


def rmsnorm(x, weight, eps=1e-5):
    in_dtype = x.dtype
    x = x.to(torch.float32)
    rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (x / rms * weight).to(in_dtype)


def gradient_clipping(parameters, max_l2_norm, eps=1e-6):
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = torch.sqrt(sum((g ** 2).sum() for g in grads))
    clip_coef = max_l2_norm / (total_norm + eps)
    if clip_coef < 1:
        for g in grads:
            g.mul_(clip_coef)
    return total_norm


class AdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = lr * math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                p.addcdiv_(exp_avg, exp_avg_sq.sqrt().add_(eps), value=-step_size)
                p.mul_(1 - lr * group["weight_decay"])
        return loss


def get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    if it < warmup_iters:
        return it / warmup_iters * max_learning_rate
    if it > cosine_cycle_iters:
        return min_learning_rate
    decay_ratio = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
    return min_learning_rate + 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) * (max_learning_rate - min_learning_rate)
"""


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    """The reference package with every sample pasted in, disguised; its findings."""
    package = vendored_package(tmp_path_factory.mktemp("vendored"), SAMPLES)
    return {(f.path, f.library_function): f for f in V.vendored_findings(package, V.handout_text)}


@pytest.mark.slow
@pytest.mark.parametrize(("module", "qualname", "rel"), SAMPLES, ids=[q for _, q, _ in SAMPLES])
def test_vendored_names_each_disguised_copy(vendored, module, qualname, rel):
    finding = vendored.get((f"cs336_basics/{rel}", f"{module}.{qualname}"))
    assert finding is not None, f"no finding names {module}.{qualname} in {rel}: {sorted(vendored)}"
    assert finding.shared > V.THRESHOLD


@pytest.mark.slow
def test_vendored_finds_nothing_else(vendored):
    """One finding per sample: the reference's own functions around them are not flagged."""
    assert len(vendored) == len(SAMPLES)


@pytest.mark.slow
def test_vendored_reference_has_no_finding():
    """Every function of the reference (staff/ aside), without `given`: nothing is flagged."""
    findings = [f for f in V.vendored_findings(REPO / "cs336_basics") if "/staff/" not in f.path]
    assert findings == []


@pytest.mark.slow
def test_vendored_short_honest_code_is_not_flagged(tmp_path):
    """Honest kernels that use the libraries' elementary operations (and torch's argument checks)."""
    (tmp_path / "cs336_basics").mkdir()
    (tmp_path / "cs336_basics" / "student.py").write_text(HONEST)
    scores = V.function_scores(tmp_path / "cs336_basics")
    assert {s.function for s in scores} >= {"softmax", "rmsnorm", "AdamW.step", "get_lr_cosine_schedule"}
    assert V.vendored_findings(tmp_path / "cs336_basics") == []


@pytest.mark.slow
def test_vendored_code_the_handout_gives_is_not_the_students(tmp_path):
    """The same copy is flagged when the student wrote it and not when `given` has it."""
    copy = disguised(library_source("torch.nn.utils.clip_grad", "_get_total_norm"))
    (tmp_path / "cs336_basics").mkdir()
    (tmp_path / "cs336_basics" / "clip.py").write_text(copy)
    (finding,) = V.vendored_findings(tmp_path / "cs336_basics")
    assert finding.library_function == "torch.nn.utils.clip_grad._get_total_norm"
    given = {"cs336_basics/clip.py": "import torch\n\n" + copy}
    assert V.vendored_findings(tmp_path / "cs336_basics", lambda rel: given.get(rel, "")) == []


def test_vendored_tokens_ignore_names_layout_comments_and_annotations():
    original = '''
    def step(params: list, lr: float = 1e-3) -> None:
        """Docstring."""
        for p in params:  # each one
            p.data.add_(p.grad, alpha=-lr,)
    '''
    rewritten = """
    def update(weights, rate=0.001):
        for w in weights:
            # the update
            w.data.add_(
                w.grad, alpha=-rate
            )
    """
    tokens = [V.normalised(textwrap.dedent(s))[0] for s in (original, rewritten)]
    assert tokens[0] == tokens[1]
    assert tokens[0][-15:] == ["V", ".", "data", ".", "add_", "(", "V", ".", "grad", ",", "alpha", "=", "-", "V", ")"]


def test_vendored_tokens_rename_attributes_of_self_not_library_attributes():
    tokens, _, _ = V.normalised("def f(self, x):\n    return self.eta_min + x.grad\n")
    assert tokens[-7:] == ["V", ".", "V", "+", "V", ".", "grad"]


def test_vendored_finding_reads_as_path_line_and_library_function():
    finding = V.VendoredFinding("cs336_basics/optim/adamw.py", 40, "torch.optim.adam._single_tensor_adam", 0.834)
    assert str(finding) == (
        "cs336_basics/optim/adamw.py:40: copies torch.optim.adam._single_tensor_adam (83% of its fingerprints)"
    )
