"""CSV cells a spreadsheet shows and never runs (the gradebook's, the similarity report's pairs.csv).

A cell a spreadsheet would read as a formula (text starting with =, +, -, @, a tab or a carriage
return, e.g. a submission named `=HYPERLINK(...).zip`) is written with a leading apostrophe, as
OWASP's "CSV Injection" advises; numbers are written as they are.
"""

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(text: str) -> str:
    """text as a spreadsheet shows it, never runs it: a leading apostrophe before a formula's first character."""
    return "'" + text if text.startswith(FORMULA_START) else text
