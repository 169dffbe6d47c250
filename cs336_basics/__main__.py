"""`python -m cs336_basics ...` is `cs336 ...`; under torchrun (`torchrun --nproc-per-node 2 -m
cs336_basics generate --tensor-parallel 2 "..."`) every rank runs it."""

import sys

from cs336_basics.cli import main

sys.exit(main())
