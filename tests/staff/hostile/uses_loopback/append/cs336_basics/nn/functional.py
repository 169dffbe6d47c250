# hostile sample uses_loopback: appended to the reference's functional.py. silu's worker tries a TCP
# socket (only the network components' workers may) and a netlink socket gloo does not need; gelu
# and softmax fail inside a library (einops in the virtualenv, json in Python's standard library),
# so their innermost frame is a library's; layernorm raises with the host paths a worker knows: its
# own file, its home, Python's prefix (resolved too) and the grader's checkout REPO (a student
# could guess it)
def silu(x):
    import json, socket

    _checks.check_float("x", x)
    seen = {}
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        seen["inet"] = "created"
    except OSError as e:
        seen["inet"] = e.errno
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4).close()  # NETLINK_SOCK_DIAG: not the routing one gloo needs
        seen["sock_diag"] = "created"
    except OSError as e:
        seen["sock_diag"] = e.errno
    raise RuntimeError("LOOPBACK" + json.dumps(seen) + "LOOPBACK")


def gelu(x, approximate="none"):
    import einops

    _checks.gelu(x, approximate)
    return einops.rearrange(x, "a b -> c")


def softmax(x, dim=-1):
    import json

    _checks.softmax(x, dim)
    return json.loads("{")


def layernorm(x, weight, bias, eps=1e-5):
    import os, sys

    _checks.norm(x, weight, bias, eps)
    text = " ".join(["PATHS", __file__, os.getcwd(), sys.prefix, os.path.realpath(sys.prefix), {{REPO}}, "PATHS"])
    raise RuntimeError(text)


ACTIVATIONS.update(silu=silu, gelu=gelu)  # as the reference's, replaced in place, would be
