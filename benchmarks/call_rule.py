"""What the call rule's profile hook costs: each component's public fixtures run through the
adapters under the public suite's recorder (CallRecorder(dispatch=False)), with the hook
(call_rule.LibraryCallTracer) and without it, in the same process, alternating, best of
--repeats. Each component is run once first, untimed (lazy imports, caches). CPU seconds of
this process (time.process_time); the ratio is with / without (> 1: the hook's cost).

    uv run python benchmarks/call_rule.py [--repeats 3] [COMPONENT ...]
"""

import argparse
import time
from contextlib import nullcontext

import torch


def run_component(adapters, fixtures, hooked: bool) -> float:
    from cs336_basics import builtin_guard

    start = time.process_time()
    for fx in fixtures:
        recorder = builtin_guard.CallRecorder(dispatch=False)
        if not hooked:
            recorder._tracer = nullcontext()
            recorder._tracer.intact = lambda: True
        with recorder:
            getattr(adapters, fx.adapter)(**fx.kwargs)
    return time.process_time() - start


def main() -> None:
    from cs336_basics import COMPONENTS
    from cs336_basics.fixture_io import fixture_names, load_fixture
    from tests import adapters

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("components", nargs="*", default=[c for c in COMPONENTS if c != "parallel"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'component':<18} {'without s':>10} {'with s':>10} {'ratio':>6}")
    total = [0.0, 0.0]
    for component in args.components:
        fixtures = [load_fixture(n) for n in fixture_names(component)]
        run_component(adapters, fixtures, True)
        times = {True: [], False: []}
        for _ in range(args.repeats):
            for hooked in (False, True):
                times[hooked].append(run_component(adapters, fixtures, hooked))
        without, with_ = min(times[False]), min(times[True])
        total[0], total[1] = total[0] + without, total[1] + with_
        print(f"{component:<18} {without:>10.3f} {with_:>10.3f} {with_ / without:>6.2f}", flush=True)
    print(f"{'all':<18} {total[0]:>10.3f} {total[1]:>10.3f} {total[1] / total[0]:>6.2f}")


if __name__ == "__main__":
    main()
