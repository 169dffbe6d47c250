"""`cs336 mutate` on a made-up tiny package: only solution-region lines are mutated, a recorded
equivalent survivor is excused, an unrecorded one fails the run, an endless loop is a timeout, and a
bad record or configuration is refused with a message naming the field."""

import difflib
from pathlib import Path

import pytest

from cs336_basics import REPO
from cs336_basics.staff.handout import all_solution_regions
from cs336_basics.staff.mutate import record
from cs336_basics.staff.mutate.session import MutateConfig, component_mutants, mutate_component

RECORDS = REPO / "tests" / "staff" / "mutants"

FUNCTIONAL = '''\
def helper(x):
    return x * 2 + 1  # outside every region: never mutated


def silu(x):
    """counts up to x, doubles the count, at most 100."""
    y = helper(x) - 1
    # BEGIN SOLUTION
    i = 0
    while i < x:
        i += 1
    out = i * 2
    if out > 100:
        out = 100
    # END SOLUTION
    return out + 0 * y
'''

TESTS = """\
from cs336_basics.nn.functional import silu


def test_silu():
    assert silu(3) == 6
"""

EQUIVALENT = """\
[[survivor]]
file = "cs336_basics/nn/functional.py"
line = "if out > 100:"
mutation = "`out > 100` -> `out >= 100`"
verdict = "equivalent"
reason = "at out == 100 both branches give 100"
"""


def _tiny(root: Path) -> Path:
    """A repository holding one package file with a component's region, its test and its record."""
    (root / "cs336_basics" / "nn").mkdir(parents=True)
    (root / "cs336_basics" / "__init__.py").write_text("")
    (root / "cs336_basics" / "nn" / "functional.py").write_text(FUNCTIONAL)
    (root / "tests").mkdir()
    (root / "tests" / "test_tiny.py").write_text(TESTS)
    (root / "pyproject.toml").write_text('[project]\nname = "tiny"\nversion = "0"\n')
    (root / "mutants").mkdir()
    (root / "mutants" / "silu.toml").write_text(EQUIVALENT)
    return root


@pytest.fixture(scope="module")
def silu_run(tmp_path_factory):
    """One `cs336 mutate -k silu` run on the tiny repository (a pytest process per mutant: ~10 s)."""
    tiny = _tiny(tmp_path_factory.mktemp("tiny"))
    config = MutateConfig(components=("silu",), repo=tiny, record_dir=tiny / "mutants", min_cpu_s=1, cpu_factor=2)
    return mutate_component(config, "silu", progress=lambda line: None)


def test_only_region_lines_are_mutated(tmp_path):
    tiny = _tiny(tmp_path)
    regions = [r for rs in all_solution_regions(tiny).values() for r in rs]
    inside = {i for r in regions for i in range(r.start + 1, r.end)}  # 0-based lines between the markers
    original = FUNCTIONAL.splitlines()
    mutants = component_mutants(tiny, "silu")[0]
    assert len(mutants) >= 8
    for m in mutants:
        ops = difflib.SequenceMatcher(a=original, b=m.text.splitlines()).get_opcodes()
        changed = {i for tag, i1, i2, _, _ in ops if tag != "equal" for i in range(i1, i2)}
        assert changed and changed <= inside, (m.mutation, changed)


@pytest.mark.slow  # second tier: a pytest process per mutant
def test_unrecorded_survivor_fails_and_recorded_one_is_excused(silu_run):
    survived = {m.mutation for m in silu_run.survivors}
    assert "`out > 100` -> `out >= 100`" in survived and "`i * 2` -> `i / 2`" not in survived
    assert [m.mutation for m, _ in silu_run.judgement.recorded] == ["`out > 100` -> `out >= 100`"]
    assert silu_run.judgement.failed
    assert {m.line_text for m in silu_run.judgement.unrecorded} == {"i = 0", "if out > 100:", "out = 100"}


@pytest.mark.slow  # second tier: a pytest process per mutant
def test_endless_loop_is_a_timeout(silu_run):
    timeouts = {m.mutation for m in silu_run.mutants if silu_run.outcomes[m.key].status == "timeout"}
    assert timeouts == {"`i += 1` -> `i -= 1`", "`i += 1` -> `pass`"}


def test_bad_record_and_config_are_refused(tmp_path):
    path = tmp_path / "silu.toml"
    path.write_text(EQUIVALENT.replace('reason = "at out == 100 both branches give 100"', 'reason = ""'))
    with pytest.raises(ValueError, match="needs a non-empty `reason`"):
        record.load(path)
    path.write_text(EQUIVALENT.replace('"equivalent"', '"fine"'))
    with pytest.raises(ValueError, match="`verdict` must be one of"):
        record.load(path)
    with pytest.raises(ValueError, match="jobs: expected an integer >= 1, got 0"):
        MutateConfig(jobs=0)
    with pytest.raises(ValueError, match="components: expected names"):
        MutateConfig(components=("silly",))


def test_committed_records_name_current_mutants():
    """Every entry of tests/staff/mutants/*.toml is well formed and names a mutant the tool makes now
    (an edit to a recorded line makes its entry stale here, in the first tier, not only in a run)."""
    for path in sorted(RECORDS.glob("*.toml")):
        keys = {m.key for m in component_mutants(REPO, path.stem)[0]}
        stale = [e.key for e in record.load(path) if e.key not in keys]
        assert not stale, f"{path.name}: entries that name no current mutant: {stale}"
