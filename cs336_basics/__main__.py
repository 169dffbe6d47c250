"""`python -m cs336_basics ...` is `cs336 ...` (the staff's commands too, where they are installed);
under torchrun (`torchrun --nproc-per-node 2 -m cs336_basics generate --tensor-parallel 2 "..."`)
every rank runs it."""

import sys

try:
    from cs336_basics.staff.cli import main
except ModuleNotFoundError:  # the student handout: no staff package
    from cs336_basics.cli import main

sys.exit(main())
