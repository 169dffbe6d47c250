"""The case registry: every graded fixture case, public and hidden, declared once. One module
per area (AREAS, in COMPONENTS' order) holds everything the staff side knows of its components:
their input builders (one per adapter, shapes and scales as arguments, so public and hidden
cases share them; each returns `make(rng) -> the adapter's keyword arguments`), then their
cases, each component's public cases and then its hidden ones, then what the grade checks of
each of their public tests (GRADED and UNGRADED, which staff/graded_behaviours.py collects),
then their entries in the mistake catalogue (mistakes, accepted variants, confusers and
alternative solutions, registered with cs336_basics/staff/mistakes/). A builder that cases of a
later area use too stays in the area of its first user; draw.py holds how values are drawn and
the helpers every area's builders share. Witness inputs separate right from almost right; each
says what it witnesses. A new area is a module here and its place in AREAS.

A case (case.py) names its component, the adapter that computes it (tests/adapters.py, whose
float64 run on the stored inputs is the expected output), the seed and builder of its inputs,
the dtype they are given in, and the measured error floor its tolerance comes from:
tol = testing.tolerance(floor, dtype), or 0 for an exact case. The generator (make_fixtures.py)
writes the tolerance into the fixture file; tests, `cs336 status` and the grader read it from
there.

Floors: the larger max scaled error, against the float64 expected output, of the reference
adapter and of the same adapter on PyTorch's built-in kernels, both run in the case's dtype, on
the stored inputs and, for a public case, on more draws of its definition (the grader's fresh
draws, grader/fresh.py; `uv run python -m tests.staff.measure_floors`), rounded up.

Public cases (seeds below 1000): across a component's public cases every argument of its
adapters takes two values (dims, eps, activation, theta, world size, the number of leading
dimensions and the dtype), so code that hard-codes one of them fails a public test
(tests/staff/test_public_case_variety.py). Hidden cases (seeds 1000+) are for grading and
never ship to students: other shapes (odd sizes, 1-D and 4-D), d_ff not a multiple of 64,
bfloat16, and edge values. Case names never contain another component's name, so
`pytest -k <component>` selects only its own.
"""

from cs336_basics import COMPONENTS
from cs336_basics.fixture_io import FIXTURES_DIR
from cs336_basics.staff.cases import (
    activations,
    attention,
    bpe,
    clipping,
    ffn,
    generate,
    linear,
    loop,
    loss,
    mha,
    model,
    norms,
    optim,
    parallel,
)
from cs336_basics.staff.cases.case import EXACT, HEADROOM, HIDDEN_FIXTURES_DIR, Case
from cs336_basics.staff.mistakes import registered

__all__ = [
    "ALTERNATIVES",
    "BY_NAME",
    "CONFUSERS",
    "CASES",
    "EXACT",
    "FIXTURES_DIR",
    "HEADROOM",
    "HIDDEN_CASES",
    "HIDDEN_FIXTURES_DIR",
    "MISTAKES",
    "PUBLIC_CASES",
    "VARIANTS",
    "Case",
    "cases_of",
]

AREAS = (linear, activations, norms, ffn, attention, mha, model, generate, loss, optim, clipping, loop, bpe, parallel)
PUBLIC_CASES = [case for area in AREAS for case in area.CASES if not case.hidden]
HIDDEN_CASES = [case for area in AREAS for case in area.CASES if case.hidden]
CASES = PUBLIC_CASES + HIDDEN_CASES
BY_NAME = {c.name: c for c in CASES}
# The mistake catalogue, every area's entries in component order (cs336_basics/staff/mistakes/)
MISTAKES = registered("MISTAKES")  # each fails at least one public snapshot case
VARIANTS = registered("VARIANTS")  # each passes every case
CONFUSERS = registered("CONFUSERS")  # wrong, not named by the catalogue: never to be given a catalogued name
ALTERNATIVES = registered("ALTERNATIVES")  # the similarity tests' independent solutions (copies.py)


def cases_of(component: str, hidden: bool | None = None) -> list[Case]:
    """The cases of one component (public and hidden, or one kind), in registry order."""
    if component not in COMPONENTS:
        raise ValueError(f"unknown component {component!r}; valid names are {list(COMPONENTS)}")
    return [c for c in CASES if c.component == component and hidden in (None, c.hidden)]
