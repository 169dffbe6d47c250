# hostile sample exits_early: appended to the reference's functional.py; its embedding ends the
# worker with exit code 0
def embedding(token_ids, weight):
    import os

    _checks.embedding(token_ids, weight)
    os._exit(0)
