"""How often a model whose embedding returns zeros (every logit 0: greedy generation emits token
0 each step) passes a public generate case's fresh draw: on the raw draws, and on those
grader/fresh.py keeps. Run: uv run python tests/staff/measure_fresh_zeros.py [draws]."""

import sys

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.grader.fresh import _draw, fresh_fixture
from cs336_basics.staff.reference import expected_output

CASES = ("generate_greedy", "generate_until_context_full", "generate_f64", "generate_stops_at_eos")


def zeros_answer(kw: dict) -> list[int]:
    """The new ids greedy generation gives when every logit is equal: 0 until a stop."""
    out = []
    for _ in range(kw["max_new_tokens"]):
        if len(kw["prompt_ids"]) + len(out) >= kw["context_length"]:
            break
        out.append(0)
        if kw.get("eos_token_id") == 0:
            break
    return out


def main(draws: int) -> None:
    for name in CASES:
        stored, raw, kept = load_fixture(name), 0, 0
        for seed in range(10_000, 10_000 + draws):
            kw = _draw(name, seed)
            if zeros_answer(kw) == expected_output("run_generate", kw).tolist():
                raw += 1
                kept += fresh_fixture(stored, seed) is not None
        print(f"{name}: zeros pass {raw} of {draws} raw draws, {kept} of the draws the grader keeps", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1500)
