"""Where one decode step spends its time: our TransformerLM with a key/value cache against
transformers on the same SmolLM2-135M weights (float32, CPU, one thread).

    uv run python benchmarks/profile_decode.py [--past 64] [--steps 20] [--top 15]

Both models prefill --past tokens, then decode --steps single tokens under torch.profiler
(operator counts and self CPU time per step) and under cProfile (Python function calls per
step). Printed per model: aten operators per step and per layer, Python calls per step and per
layer, and the top operators and Python functions by self time."""

import argparse
import cProfile
import pstats

import torch
from smollm2_pair import smollm2_pair
from torch.profiler import ProfilerActivity, profile


def decode_ours(model, past, steps):
    cache = model.new_kv_cache(past + steps + 1)
    model(torch.arange(past)[None] % 1000, kv_cache=cache)
    token = torch.tensor([[42]])

    def run():
        for _ in range(steps):
            model(token, kv_cache=cache)

    return run


def decode_theirs(model, past, steps):
    from transformers import DynamicCache

    cache = DynamicCache()
    model(torch.arange(past)[None] % 1000, past_key_values=cache, use_cache=True)
    token = torch.tensor([[42]])

    def run():
        for i in range(steps):
            pos = torch.tensor([[past + i]])
            model(token, past_key_values=cache, use_cache=True, position_ids=pos, cache_position=pos[0])

    return run


def report(name, make_run, past, steps, layers, top):
    run = make_run()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    events = prof.key_averages()
    ops = sum(e.count for e in events if e.key.startswith("aten::"))
    self_us = sum(e.self_cpu_time_total for e in events)
    print(f"\n== {name}: {ops / steps:.0f} aten ops per step ({ops / steps / layers:.1f} per layer), "
          f"self CPU {self_us / steps / 1000:.2f} ms per step (profiler on)")  # fmt: skip
    rows = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    for e in rows:
        print(f"  {e.key:42s} {e.count / steps:7.1f}/step {e.self_cpu_time_total / steps:9.1f} us/step")
    run = make_run()
    pr = cProfile.Profile()
    pr.enable()
    run()
    pr.disable()
    st = pstats.Stats(pr)
    calls = sum(v[1] for v in st.stats.values())
    print(f"-- {name}: {calls / steps:.0f} Python-level calls per step ({calls / steps / layers:.1f} per layer)")
    st.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--past", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ours, theirs, _ = smollm2_pair()
    layers = ours.config.num_layers
    with torch.inference_mode():
        for name, model, make in (("ours", ours, decode_ours), ("transformers", theirs, decode_theirs)):
            make(model, args.past, 2)()  # warm up
            report(name, lambda m=model, mk=make: mk(m, args.past, args.steps), args.past, args.steps, layers, args.top)


if __name__ == "__main__":
    main()
