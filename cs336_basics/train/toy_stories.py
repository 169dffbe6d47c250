"""Seeded template stories: a small, learnable stand-in for the project corpus (the `-k train`
test's corpus, and `--corpus` for quick runs). Each story names a child, a friend, a place and a
thing from short word lists, then tells one of a few plots in simple sentences, as TinyStories'
do (Eldan & Li 2023); the names recur within a story, so a model that attends back lowers its
loss below what word frequencies give. NumPy's PCG64 draws everything: every machine writes the
same text."""

import numpy as np

from cs336_basics.corpus import EOT

NAMES = ["Lily", "Tom", "Mia", "Ben", "Sue", "Max", "Anna", "Sam", "Lucy", "Tim", "Zoe", "Jack"]
FRIENDS = ["dog", "cat", "bird", "frog", "bunny", "bear", "duck", "fox"]
PLACES = ["park", "garden", "forest", "beach", "farm", "house", "river", "hill"]
THINGS = ["ball", "kite", "hat", "box", "book", "cake", "boat", "flower", "toy car", "red shoe"]
FEELINGS = ["happy", "sad", "scared", "excited", "tired", "proud", "surprised"]
PLOTS = [
    'One day, {n} went to the {p} with a {f}. They found a {t}. {n} said, "Look at this {t}!" '
    "The {f} was {e}. They played with the {t} all day. When the sun went down, {n} and the {f} went home.",
    "{n} had a {t}. {n} loved the {t} very much. One day, the {t} was lost in the {p}. {n} was {e}. "
    'A little {f} came and helped {n} look. The {f} found the {t} under a tree. {n} said, "Thank you, {f}!"',
    "Once upon a time, there was a {f} who lived near the {p}. The {f} wanted a {t}. {n} saw the {f} and "
    "gave it a {t}. The {f} was so {e}! From that day on, {n} and the {f} were best friends.",
    "{n} and a {f} went to the {p}. It started to rain. {n} was {e}, but the {f} had an idea. "
    "They hid in a big {t}. Soon the rain stopped, and they laughed and ran home.",
]


def toy_stories(rng: np.random.Generator, n_stories: int) -> str:
    """n_stories stories, each followed by <|endoftext|>."""
    out = []
    for _ in range(n_stories):
        plot, n, f, p, t, e = (int(rng.integers(len(w))) for w in (PLOTS, NAMES, FRIENDS, PLACES, THINGS, FEELINGS))
        story = PLOTS[plot].format(n=NAMES[n], f=FRIENDS[f], p=PLACES[p], t=THINGS[t], e=FEELINGS[e])
        out.append(story + EOT)
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # python -m cs336_basics.train.toy_stories N_STORIES OUT.txt [SEED]
    import sys

    n, out, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0
    with open(out, "w", encoding="utf-8") as f:
        f.write(toy_stories(np.random.default_rng(seed), n))
