"""The grader (staff only): `cs336 grade`, `cs336 grade-all`, `cs336 autograder`.

config.py      grading.toml: points per component, limits
cases.py       the graded cases: public (TOL dicts of tests/) and hidden, with tolerances
submission.py  find and copy the submission's package; safe zip extraction
sandbox.py     what a worker may do: limits, no network, hidden files, its own user
worker.py      the child process that runs student code on the inputs
runner.py      the grader's side of the workers: timing, killing, restarting
sanitize.py    worker text made plain and short before any message, results.json or console
grade.py       grade one submission: prepare, run, compare (in the grader), score
report.py      Gradescope results.json and the console table
gradebook.py   grade a directory of submissions in parallel; CSV gradebook
autograder.py  the Gradescope bundle (setup.sh, run_autograder)
cli.py         the subcommands
"""
