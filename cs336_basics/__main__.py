"""`python -m cs336_basics ...` is this installation's `cs336 ...` (the command its package
metadata names, so the staff's where their tools are installed); under torchrun
(`torchrun --nproc-per-node 2 -m cs336_basics generate --tensor-parallel 2 "..."`) every rank runs it."""

import sys
from importlib.metadata import entry_points

from cs336_basics.cli import main

scripts = entry_points(group="console_scripts", name="cs336")
sys.exit((next(iter(scripts)).load() if scripts else main)())
