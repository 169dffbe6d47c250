"""`cs336 mutate`: mutation testing of the solution regions against each component's public tests.

mutants.py makes the mutants (only inside `# BEGIN SOLUTION` / `# END SOLUTION`), execute.py runs
the public tests on one scratch copy under a CPU limit, session.py runs one component, record.py
holds the committed survivors (tests/staff/mutants/<component>.toml), report.py prints, cli.py parses.
"""
