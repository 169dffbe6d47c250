"""The grader (staff only): `cs336 grade`, `cs336 grade-all`, `cs336 autograder`, `cs336 similarity`.

cli.py           the subcommands
config.py        the points (cs336_basics.POINTS, the grader's copy) and grading.toml's limits
cases.py         the graded cases (public and hidden) of the registry, with their fixtures' tolerances
grade.py         grade one submission: prepare, run, compare (in the grader), score
fixtures.py      fixtures read in the grader's process, and the flag that it has read expected values
submission.py    find and copy the submission's package; safe zip extraction
fresh.py         public cases drawn anew, with a seed the student never sees
single_process.py  what each tensor-parallel adapter computes, in one process (fresh draws)
static_check.py  the lines of a submission's source flagged for staff review
vendored.py      functions of a submission copied from a library's source, for staff review
preflight.py     the isolation level this machine allows, probed before grading
environment.py   whether a worker's user can read and import the grader's Python
sandbox.py       what a worker may do: namespaces, a private root, limits, its own user
cgroup.py        a control group per worker: memory, processes, CPU
seccomp.py       the workers' seccomp filters
worker.py        the child process that runs student code on the inputs
runner.py        the grader's side of the workers: timing, killing, restarting
protocol.py      the files, progress lines and metadata keys a worker and the grader share
sanitize.py      worker text made plain, short and free of host paths before anyone sees it
report.py        Gradescope results.json and the console table
gradebook.py     grade a directory of submissions in parallel; CSV gradebook
leaderboard.py   the leaderboard entry evaluated in the sandbox (nats/token, bits/byte)
spreadsheet.py   a gradebook cell a spreadsheet shows as text, never runs as a formula
similarity.py    how alike submissions are (grade-all --similarity)
fingerprints.py  copydetect's fingerprints with a hash that no process salts
similarity_html.py  the similarity report's HTML: copydetect's template, labelled plots
similarity_cli.py  `cs336 similarity`
autograder.py    the Gradescope bundle (setup.sh, run_autograder)
"""
