"""The mistake catalogue: plausible wrong implementations of the kernels, each with a diagnosis
in words; correct implementations written differently (the accepted variants); wrong ones the
catalogue does not name (the confusers); and independent correct bodies of functional.py's
kernels (the alternatives).

Staff only. The fixture generator stores, for every public case a mistake fails, a fingerprint
of the mistake's output (make_fixtures.py), so a student's failing output can be named
("your output equals what RMSNorm with epsilon outside the square root gives") without
shipping any of this code. tests/staff/test_mistake_catalogue.py checks that every mistake
fails a case and is named there, and that every variant passes every case (which shows the
tolerances are not tighter than the arithmetic allows). A confuser is one bug in otherwise
correct code: a snapshot test may describe what its output shows, but must never give it a
catalogued mistake's name (tests/staff/test_names.py). The alternatives are the similarity
tests' independent solutions (copies.py), written the way another student might: loops and
explicit broadcasting where the reference and the variants use library calls.

The entries live in the area modules of the case registry (cs336_basics/staff/cases/<area>.py),
after each area's cases. Each entry is registered by the decorator right above its function:

    @mistake("rmsnorm-sum_not_mean", F, "rmsnorm", diagnosis="RMSNorm with the sum of squares ...")
    def rmsnorm_sum_not_mean(x, weight, eps=1e-5, cast_before_gain=False): ...

or, for an alternative, by `alternative(component, kernel, body)`. The case registry
(cs336_basics.staff.cases) imports every area and collects the entries as MISTAKES, VARIANTS,
CONFUSERS and ALTERNATIVES, in `cs336_basics.COMPONENTS` order (registration order within a
component), so nothing here needs editing when an area or a component is added.
"""

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import torch

from cs336_basics import COMPONENTS
from cs336_basics.nn import _checks


@dataclass(frozen=True)
class Variant:
    """A replacement for one kernel (or module method): `owner.attribute = replacement`."""

    name: str  # <component>-<what>, used as the test id
    owner: object  # the module or class whose attribute is replaced
    attribute: str
    replacement: Callable

    @property
    def component(self) -> str:
        return self.name.split("-")[0]

    @contextlib.contextmanager
    def applied(self):
        """The replacement in place, and every kernel checking its own arguments, as in a model
        whose parts a student wrote (the replacement's output may not be what the next expects)."""
        original = getattr(self.owner, self.attribute)
        setattr(self.owner, self.attribute, self.replacement)
        try:
            with _checks.every_check():
                yield
        finally:
            setattr(self.owner, self.attribute, original)


@dataclass(frozen=True)
class Mistake(Variant):
    """A plausible wrong implementation and, in words, what it does wrong."""

    raises: tuple[type[BaseException], ...] = ()  # exceptions that are this mistake's failure, besides a wrong output
    diagnosis: str = ""  # completes "your output equals what ... gives"
    # What the output shows, true of every known wrong implementation that shares this mistake's
    # fingerprint: said instead of the name when the fingerprint is shared (make_fixtures.py)
    shows: str = ""


@dataclass(frozen=True)
class Alternative:
    """A correct body of functional.<kernel>'s solution region, written independently of the
    reference and of the accepted variants."""

    component: str
    kernel: str
    body: str  # source, any indentation


# Every entry registered so far, by kind; the case registry collects them (`registered`)
_ENTRIES: dict[str, list] = {kind: [] for kind in ("MISTAKES", "VARIANTS", "CONFUSERS", "ALTERNATIVES")}


def mistake(name: str, owner: object, attribute: str, *, diagnosis: str, shows: str = "",
            raises: tuple[type[BaseException], ...] = ()):  # fmt: skip
    """Register the decorated function as the mistake `name` (`<component>-<what>`) replacing
    `owner.attribute`."""

    def register(fn: Callable) -> Callable:
        _ENTRIES["MISTAKES"].append(
            Mistake(name, owner, attribute, fn, raises=raises, diagnosis=diagnosis, shows=shows)
        )
        return fn

    return register


def variant(name: str, owner: object, attribute: str):
    """Register the decorated function as the accepted variant `name` replacing `owner.attribute`."""

    def register(fn: Callable) -> Callable:
        _ENTRIES["VARIANTS"].append(Variant(name, owner, attribute, fn))
        return fn

    return register


def confuser(name: str, owner: object, attribute: str):
    """Register the decorated function as the confuser `name` replacing `owner.attribute`."""

    def register(fn: Callable) -> Callable:
        _ENTRIES["CONFUSERS"].append(Variant(name, owner, attribute, fn))
        return fn

    return register


def alternative(component: str, kernel: str, body: str) -> None:
    """Register `body` as the alternative of functional.<kernel>, a kernel of `component`."""
    _ENTRIES["ALTERNATIVES"].append(Alternative(component, kernel, body))


def up(x):
    """x in float64 if it is float64, else in float32 (the compute dtype of the kernels)."""
    return x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)


def plus_bias(y, bias):
    return y if bias is None else y + bias


def registered(kind: str) -> list:
    """The entries of one kind ("MISTAKES", "VARIANTS", "CONFUSERS", "ALTERNATIVES") registered so far,
    in component order (registration order within a component)."""
    order = {c: i for i, c in enumerate(COMPONENTS)}
    return sorted(_ENTRIES[kind], key=lambda entry: order.get(entry.component, len(order)))
