"""The public tests' conftest keeps torch._dynamo unimported while an optimizer is built,
stepped, zeroed, saved and loaded (tests/_no_dynamo.py; the optimizer is the checkpoint tests'
momentum_optimizer, a torch.optim.Optimizer as a student's AdamW is): a torch release that moves
torch._disable_dynamo's cache fails here, not silently in every student's loop."""

import ast
import subprocess
import sys

from cs336_basics.staff.handout import REPO

SCRIPT = """
import sys
import torch
from tests._no_dynamo import skip_dynamo_in_optimizer_methods
from tests.adapter_checks import momentum_optimizer

found = skip_dynamo_in_optimizer_methods()
p, q = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))
optimizer = momentum_optimizer([p])
optimizer.add_param_group({"params": [q]})
p.grad, q.grad = torch.ones(3), torch.ones(2)
optimizer.step()
optimizer.zero_grad()
optimizer.load_state_dict(optimizer.state_dict())
print(sorted(found), "torch._dynamo" in sys.modules)
"""


def test_an_optimizer_subclass_runs_without_importing_torch_dynamo_under_the_tests_conftest():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, check=True)
    found, imported = out.stdout.rsplit(" ", 1)
    assert {"add_param_group", "zero_grad", "state_dict", "load_state_dict"} <= set(ast.literal_eval(found))
    assert imported.strip() == "False", "building or stepping the optimizer imported torch._dynamo"
