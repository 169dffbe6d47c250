# hostile sample uses_loopback: appended to the reference's lr_schedule.py, replacing the schedule by
# one that prints the host paths a worker knows (as layernorm raises them) and ends its worker (the
# reference's argument checks, which the graded inputs pass, are left out)
def get_lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    import os, sys

    text = " ".join(["PATHS", __file__, os.getcwd(), sys.prefix, os.path.realpath(sys.prefix), {{REPO}}, "PATHS"])
    print(text, file=sys.stderr, flush=True)
    os._exit(3)
