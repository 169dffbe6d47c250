"""Staff-only code: fixture generation, the handout builder and the grader.
None of it ships to students."""
