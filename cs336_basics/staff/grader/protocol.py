"""What a worker (worker.py) and the grader (runner.py, grade.py) say to each other, each name
once. Nothing the worker sends is an object: files in its home directory, read as data.

Progress, a text file the worker appends lines to and the runner polls (only these exact lines
count): STARTED once the worker's own startup is done, before any of the submission's code runs
(a worker that ends before it, or writes GRADER_BROKEN with its reason in GRADER_BROKEN_FILE,
could not run for a reason that is not the student's: the grading is refused); READY after the submission's package was imported, done(component) after each component,
IMPORT_FAILED (the error text in IMPORT_ERROR_FILE) instead of READY. SANDBOX_NOTES_FILE holds
the worker's notes on its sandbox, written as root before the user switch (staff only).

Per case, output_file(case): a safetensors file with at most one tensor, OUTPUT, and string
metadata: CALLS (a JSON list of the torch functions and operators recorded), OPERATORS (how
many operators ran) and ENTERED (a JSON list of [path, first line] of each def of the package
that ran: source_rule.costs), or ERROR (an error text; TAMPERED = YES when the submission changed the
adapters or the call recorder). An error text (ERROR, IMPORT_ERROR_FILE) is at most ERROR_CHARS
characters, host paths included (the grader hides them: sanitize.hide_paths). Its inputs, input_file(case), are the adapter's keyword
arguments (torch.save, read with weights_only).
"""

PROGRESS_FILE = "progress"
STARTED = "started"
GRADER_BROKEN = "grader-broken"
GRADER_BROKEN_FILE = "grader_broken.txt"
READY = "ready"
IMPORT_FAILED = "import-failed"
IMPORT_ERROR_FILE = "import_error.txt"
SANDBOX_NOTES_FILE = "sandbox-notes"

OUTPUT = "output"
CALLS = "calls"
OPERATORS = "operators"
ENTERED = "entered"
ERROR = "error"
TAMPERED = "tampered"
YES = "1"
ERROR_CHARS = 4000


def done(component: str) -> str:
    """The progress line after every case of `component` was run and saved."""
    return f"done {component}"


def output_file(case: str) -> str:
    return f"{case}.safetensors"


def input_file(case: str) -> str:
    return f"{case}.pt"
